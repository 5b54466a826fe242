package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// commitRow: the interval, commits per second, the log's MB/s and the
// commit latency.
const commitRow = "%-14s %10s %12s %9s %9s %9s %9s %9s\n"

func (t *Writer) commitInterval(iv result.Interval) error {
	c := iv.Commit
	if c == nil {
		return nil
	}
	if t.header != "commit" {
		t.header = "commit"
		if _, err := fmt.Fprintf(t.w, commitRow, "interval", "commits/s", "MB/s", "p50", "p90", "p99", "p99.9", "max"); err != nil {
			return err
		}
	}
	l := c.Latency
	_, err := fmt.Fprintf(t.w, commitRow, span(iv), metric.FormatCount(int64(c.Rate+0.5)), metric.FormatByteRate(c.BytesPerSecond),
		dur(l.P50), dur(l.P90), dur(l.P99), dur(l.P999), dur(l.Max))
	return err
}

// ackTitles say what a commit waited for, in each engine's words.
var ackTitles = map[string]string{
	result.AckReceive: "receipt (read off the socket, nothing written)",
	result.AckWrite:   "write (in the agent's page cache: PostgreSQL remote_write, MySQL semi-sync AFTER_SYNC)",
	result.AckFlush:   "flush (durable on the agent: PostgreSQL on, SQL Server synchronous commit)",
}

func commitSummary(b *strings.Builder, c *result.Commit) {
	cfg := c.Config
	flight := "one in flight"
	if cfg.InFlight > 1 {
		flight = fmt.Sprintf("%d in flight", cfg.InFlight)
	}
	fmt.Fprintf(b, "commits      %s in %s = %s/s, %s, %s blocks\n", metric.FormatCount(c.Commits), dur(c.Duration),
		metric.FormatCount(int64(c.Rate+0.5)), flight, metric.FormatBytes(cfg.BlockBytes))
	ack := ackTitles[cfg.Ack]
	if cfg.Ack == result.AckFlush {
		ack = strings.Replace(ack, "durable", "durable by "+cfg.Flush, 1)
	}
	fmt.Fprintf(b, "acknowledged after %s\n", ack)
	fmt.Fprintf(b, "log          %s of log shipped synchronously\n", metric.FormatByteRate(c.BytesPerSecond))
	l := c.Latency
	fmt.Fprintf(b, "commit       min %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s (send to acknowledgement)\n",
		dur(l.Min), dur(l.P50), dur(l.P90), dur(l.P99), dur(l.P999), dur(l.Max), dur(l.Mean))
	if w := c.AgentWrite; w != nil {
		fmt.Fprintf(b, "agent write  p50 %s  p90 %s  p99 %s  max %s (each batch of blocks, into the page cache)\n", dur(w.P50), dur(w.P90), dur(w.P99), dur(w.Max))
	}
	if f := c.AgentFlush; f != nil {
		what := "fdatasync"
		if cfg.Flush == result.FlushDsync {
			what = "the O_DSYNC write"
		}
		per := ""
		if c.Flushes > 0 {
			per = fmt.Sprintf(", %s flushes, %.2f blocks each", metric.FormatCount(c.Flushes), float64(c.Commits)/float64(c.Flushes))
		}
		fmt.Fprintf(b, "agent flush  p50 %s  p90 %s  p99 %s  max %s (%s%s)\n", dur(f.P50), dur(f.P90), dur(f.P99), dur(f.Max), what, per)
	}
	if t := c.Target; t != nil {
		fs := ""
		if t.Filesystem != "" {
			fs = t.Filesystem + ", "
		}
		fmt.Fprintf(b, "log file     %s on the agent (%s%s, through the page cache", t.Path, fs, metric.FormatBytes(t.FileBytes))
		if t.Layout > 0 {
			fmt.Fprintf(b, "; laid out in %s", dur(t.Layout))
		}
		b.WriteString(")\n")
	}
	fmt.Fprintf(b, "connect      %s (TCP handshake of the log connection)\n", dur(c.Connect))
	if c.TCPUnavailable != "" {
		fmt.Fprintf(b, "kernel rtt   (%s)\n", c.TCPUnavailable)
	} else {
		fmt.Fprintf(b, "kernel rtt   %s smoothed, %s min, %d retransmits\n", dur(c.KernelRTT), dur(c.KernelMinRTT), c.Retransmits)
	}
	if c.CPU.Available {
		fmt.Fprintf(b, "cpu          client %.0f%%, agent %.0f%% of a core\n", c.CPU.Local, c.CPU.Remote)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(b, "note         %s\n", n)
	}
	if c.Stopped != "" {
		fmt.Fprintf(b, "stopped      %s\n", c.Stopped)
	}
}
