package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// fleetSummary writes `narrows fleet disk`: each host's figures for each
// pattern, its share of the median host's IOPS, when it began against the
// fleet's instant, then the fleet's sums.
func fleetSummary(b *strings.Builder, f *result.Fleet) {
	for i, name := range f.Config.Patterns {
		fmt.Fprintf(b, "%s\n", name)
		fmt.Fprintf(b, "  %-24s %12s %12s %10s %10s %8s %10s\n", "host", "IOPS", "MB/s", "p50", "p99", "median", "began")
		var median float64
		if i < len(f.Patterns) {
			median = f.Patterns[i].MedianIOPS
		}
		for _, h := range f.Hosts {
			if h.Disk == nil || i >= len(h.Disk.Patterns) {
				why := h.Error
				if why == "" {
					why = "no figures"
				}
				fmt.Fprintf(b, "  %-24s %s\n", h.Name, why)
				continue
			}
			p := h.Disk.Patterns[i]
			share, began := "-", "-"
			if median > 0 {
				share = fmt.Sprintf("%.0f%%", 100*p.IOPS/median)
			}
			if h.StartedAfter != nil {
				began = "+" + metric.FormatDuration(h.StartedAfter.D())
			}
			fmt.Fprintf(b, "  %-24s %12s %12s %10s %10s %8s %10s\n", h.Name, metric.FormatCount(int64(p.IOPS+0.5)),
				fmt.Sprintf("%.1f", p.Throughput/1e6), dur(p.P50), dur(p.P99), share, began)
		}
		if i < len(f.Patterns) {
			fp := f.Patterns[i]
			p50, p99 := "", "med "+dur(fp.MedianP99)
			if l := fp.Latency; l != nil {
				p50, p99 = dur(l.P50), dur(l.P99)
			}
			fmt.Fprintf(b, "  %-24s %12s %12s %10s %10s\n", fmt.Sprintf("fleet (%d hosts)", fp.Hosts), metric.FormatCount(int64(fp.IOPS+0.5)),
				fmt.Sprintf("%.1f", fp.Throughput/1e6), p50, p99)
		}
	}
	if s := f.Start; s != nil {
		fmt.Fprintf(b, "started together: %d hosts began %s after the instant at the median, %s at most (skew %s)\n",
			s.Hosts, metric.FormatDuration(s.MedianAfter.D()), metric.FormatDuration(s.MaxAfter.D()), metric.FormatDuration(s.Skew.D()))
	}
}
