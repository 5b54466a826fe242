package advisor

import (
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// What each acknowledgement point stands for, as a synchronous replica
// setting.
var commitAck = map[string]string{
	result.AckReceive: "a replica that acknowledges on receipt",
	result.AckWrite:   "a replica that acknowledges once written (PostgreSQL synchronous_commit = remote_write, MySQL semi-sync AFTER_SYNC)",
	result.AckFlush:   "a replica that acknowledges once durable (PostgreSQL synchronous_commit = on, SQL Server synchronous commit)",
}

// FlushBound: past this share of the median commit, the replica's flush,
// not the network, sets the commit latency.
const FlushBound = 0.5

// MinFlushes is the fewest of the agent's writes and flushes whose median
// a verdict rests on: with fewer, one stall of the replica's disk (a
// checkpoint's writes landing there) is half the sample, and a median of
// a handful is that stall, not the device.
const MinFlushes = 20

func commitFindings(c *result.Commit) []result.Finding {
	if c.Commits == 0 {
		return nil
	}
	l := c.Latency
	var out []result.Finding
	if c.Config.InFlight <= 1 {
		out = append(out, result.Finding{Code: "commit.session_rate", Severity: "info",
			Summary: fmt.Sprintf("With %s here, one session waits %s per commit (p50; p99 %s): at most %s commits per second, one after another.",
				commitAck[c.Config.Ack], metric.FormatDuration(l.P50.D()), metric.FormatDuration(l.P99.D()), metric.FormatCount(int64(c.Rate+0.5))),
			Detail: "A single-threaded job that commits each row (or each small batch) is capped there, whatever the primary's own log device does. " +
				"Batch more work per commit, or spread the work over parallel sessions, whose commits the replica acknowledges together (--in-flight measures that).",
			Values: map[string]float64{"commits_per_second": c.Rate, "commit_p50_seconds": l.P50.D().Seconds(), "commit_p99_seconds": l.P99.D().Seconds()}})
	} else {
		f := result.Finding{Code: "commit.log_throughput", Severity: "info",
			Summary: fmt.Sprintf("With %d blocks in flight, %s accepted %s of log (%s blocks per second).",
				c.Config.InFlight, commitAck[c.Config.Ack], metric.FormatByteRate(c.BytesPerSecond), metric.FormatCount(int64(c.Rate+0.5))),
			Detail: "A bulk operation (an index build, a bulk load, a large UPDATE) that generates log faster than that waits on the replica: its commit, and every session's behind it, slows to this rate.",
			Values: map[string]float64{"bytes_per_second": c.BytesPerSecond, "commits_per_second": c.Rate}}
		if c.Flushes > 0 {
			per := float64(c.Commits) / float64(c.Flushes)
			f.Detail += fmt.Sprintf(" The agent made %.1f blocks durable per flush on average, as a walreceiver or an Always On secondary hardens what arrived while it last flushed.", per)
			f.Values["blocks_per_flush"] = per
		}
		out = append(out, f)
	}
	if f, ok := commitSplit(c); ok {
		out = append(out, f)
	} else if c.Config.InFlight <= 1 && (c.AgentFlush != nil || c.AgentWrite != nil) && c.Commits < MinFlushes && len(out) > 0 {
		out[0].Detail += fmt.Sprintf(" How much of it is the replica's storage is not said: %s timed on the agent, fewer than the %d a median needs; run it longer (--duration).",
			metric.Plural(c.Commits, "write"), MinFlushes)
	}
	return out
}

// commitSplit says how much of the median commit was the agent's write
// and flush, and how much the round trip around them.
func commitSplit(c *result.Commit) (result.Finding, bool) {
	total := c.Latency.P50.D()
	if total <= 0 || (c.AgentFlush == nil && c.AgentWrite == nil) || c.Config.InFlight > 1 || c.Commits < MinFlushes {
		return result.Finding{}, false
	}
	var agent float64
	var parts string
	if w := c.AgentWrite; w != nil {
		agent += w.P50.D().Seconds()
		parts = "write " + metric.FormatDuration(w.P50.D())
	}
	if f := c.AgentFlush; f != nil {
		agent += f.P50.D().Seconds()
		if parts != "" {
			parts += " + "
		}
		parts += c.Config.Flush + " " + metric.FormatDuration(f.P50.D())
	}
	share := min(agent/total.Seconds(), 1)
	rest := max(total.Seconds()-agent, 0)
	f := result.Finding{Code: "commit.split", Severity: "info",
		Values: map[string]float64{"agent_seconds": agent, "network_and_hosts_seconds": rest, "agent_share": share}}
	f.Summary = fmt.Sprintf("Of the median commit of %s, the replica's storage took %s (%s, %.0f%%); the round trip and the two hosts' stacks the other %s.",
		metric.FormatDuration(total), metric.FormatDuration(duration(agent)), parts, 100*share, metric.FormatDuration(duration(rest)))
	switch {
	case c.Config.Ack == result.AckFlush && share >= FlushBound:
		f.Detail = "The replica's log device, not the network, sets the commit latency: a device with a faster flush (a write cache with power-loss protection, NVMe) on the replica helps; a closer replica would not much."
	case share < FlushBound:
		f.Detail = "The network, not the replica's storage, sets the commit latency: a replica closer to the primary (or a less loaded path) helps; faster storage on it would not much."
	}
	if c.KernelMinRTT > 0 {
		f.Detail += fmt.Sprintf(" The kernel's minimum RTT on the connection was %s.", metric.FormatDuration(c.KernelMinRTT.D()))
	}
	return f, true
}

// duration is seconds as a time.Duration.
func duration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
