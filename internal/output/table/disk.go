package table

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// What each profile stands for, in a DBA's words.
var profileTitles = map[string]string{
	result.ProfileData:   "data: pages read and written at random, as data files are (queue depth = I/Os in flight)",
	result.ProfileLog:    "log: sequential writes, each durable before the next, as a transaction log is (commit = write + flush)",
	result.ProfileBackup: "backup: large sequential reads and writes, as backup, restore and replica seeding stream",
	result.ProfileCustom: "custom: the shape --rw, --block, --qd, --threads and --sync asked for",
}

// diskIntervalRow: the pattern last, where a name of any length fits
// (rows are printed as they come, before the longest name is known).
const diskIntervalRow = "%-7s %-14s %10s %12s %9s %9s %9s  %s\n"

func (t *Writer) diskInterval(iv result.Interval) error {
	d := iv.Disk
	if d == nil {
		return nil
	}
	if t.header != "disk" {
		t.header = "disk"
		if _, err := fmt.Fprintf(t.w, diskIntervalRow, "profile", "interval", "IOPS", "MB/s", "p50", "p99", "max", "pattern"); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(t.w, diskIntervalRow, d.Profile, span(iv), metric.FormatCount(int64(d.IOPS+0.5)),
		metric.FormatByteRate(d.ByteRate), dur(d.Latency.P50), dur(d.Latency.P99), dur(d.Latency.Max), d.Pattern)
	return err
}

// diskRow: pattern (padded to the longest name), rate, MB/s, which
// latency, its percentiles, CPU.
const diskRow = "%-*s %10s %12s  %-7s %9s %9s %9s %9s %9s %6s\n"

func diskSummary(b *strings.Builder, d *result.Disk) {
	what := "test file " + metric.FormatBytes(d.FileBytes)
	if d.Device {
		what = "block device, read only, " + metric.FormatBytes(d.FileBytes) + " read"
	}
	if d.Filesystem != "" {
		what = d.Filesystem + ", " + what
	}
	io := d.DirectWord()
	if !d.Direct {
		io = "buffered (" + d.CacheWord() + ")"
	}
	fmt.Fprintf(b, "%s; engine %s; %s", what, d.Engine, io)
	if d.Layout > 0 {
		fmt.Fprintf(b, "; laid out in %s", dur(d.Layout))
	}
	b.WriteString("\n")
	for _, note := range []string{d.DirectUnavailable, d.EngineNote} {
		if note != "" {
			fmt.Fprintf(b, "(%s)\n", note)
		}
	}
	w := 24
	for _, p := range d.Patterns {
		w = max(w, utf8.RuneCountInString(p.Name))
	}
	profile := ""
	for _, p := range d.Patterns {
		if p.Profile != profile {
			profile = p.Profile
			fmt.Fprintf(b, "\n%s\n", profileTitles[p.Profile])
			rate := "IOPS"
			if p.Profile == result.ProfileLog || p.Sync != result.SyncNone {
				rate = "flushes/s"
				if !d.Direct {
					fmt.Fprintf(b, "(buffered: a write copies into the %s; the flush carries it to the device)\n", d.CacheWord())
				}
			}
			fmt.Fprintf(b, diskRow, w, "pattern", rate, "MB/s", "latency", "p50", "p90", "p99", "p99.9", "max", "cpu")
		}
		patternRows(b, p, w)
	}
}

func patternRows(b *strings.Builder, p result.DiskPattern, w int) {
	cpu := "-"
	if p.CPUUnavailable == "" {
		cpu = fmt.Sprintf("%.0f%%", p.CPU)
	}
	row := func(name string, rate, bytesPerSec float64, label string, l result.Latencies, cpu string) {
		r, mb := "", ""
		if rate >= 0 {
			r, mb = metric.FormatCount(int64(rate+0.5)), metric.FormatByteRate(bytesPerSec)
		}
		line := fmt.Sprintf(diskRow, w, name, r, mb, label, dur(l.P50), dur(l.P90), dur(l.P99), dur(l.P999), dur(l.Max), cpu)
		b.WriteString(strings.TrimRight(line, " \n") + "\n")
	}
	switch {
	case p.WriteLatency != nil && p.FlushLatency != nil:
		row(p.Name, p.FlushRate, p.Throughput, "write", *p.WriteLatency, cpu)
		row("", -1, 0, "flush", *p.FlushLatency, "")
		row("", -1, 0, "commit", p.Latencies, "")
	case p.Sync == result.SyncDsync:
		row(p.Name, p.FlushRate, p.Throughput, "commit", p.Latencies, cpu)
	default:
		row(p.Name, p.IOPS, p.Throughput, "", p.Latencies, cpu)
		if p.Read != nil && p.Write != nil {
			row("  reads", p.Read.IOPS, p.Read.Throughput, "", p.Read.Latencies, "")
			row("  writes", p.Write.IOPS, p.Write.Throughput, "", p.Write.Latencies, "")
		}
	}
	if p.Stopped != "" {
		fmt.Fprintf(b, "  (stopped: %s)\n", p.Stopped)
	}
}
