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
//
// A sweep's steps are many (shapes × depths), so it writes each shape's
// curve, and the hosts' own rows at the knee only (at the deepest step
// without one): the outliers of every step are in the verdicts.
func fleetSummary(b *strings.Builder, f *result.Fleet) {
	rows := func(int) bool { return true }
	if sw := f.Sweep; sw != nil {
		fleetSweep(b, sw, f.Patterns)
		show := map[int]bool{}
		for _, c := range sw.Curves {
			k := len(c.Points) - 1
			if c.Knee != nil {
				k = *c.Knee
			}
			show[c.Points[k].Pattern] = true
		}
		rows = func(i int) bool { return show[i] }
	}
	for i, name := range f.Config.Patterns {
		if !rows(i) {
			continue
		}
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

// fleetSweep writes each shape's curve: the fleet's IOPS, MB/s and
// merged latency at each depth, each step against the objective, the
// knee marked.
func fleetSweep(b *strings.Builder, sw *result.FleetSweep, fps []result.FleetPattern) {
	for _, c := range sw.Curves {
		fmt.Fprintf(b, "sweep: %s, every host at once\n", c.Shape)
		fmt.Fprintf(b, "  %6s %12s %12s %12s %10s %10s %10s", "QD", "IOPS", "MB/s", "median host", "p50", "p99", "p99.9")
		if sw.SLO != nil {
			fmt.Fprintf(b, "  %s ≤ %s", sw.SLO.Name, dur(sw.SLO.Bound))
		}
		b.WriteString("\n")
		for j, pt := range c.Points {
			fp := fps[pt.Pattern]
			p50, p99, p999 := "-", "-", "-"
			if l := fp.Latency; l != nil {
				p50, p99, p999 = dur(l.P50), dur(l.P99), dur(l.P999)
			}
			fmt.Fprintf(b, "  %6d %12s %12s %12s %10s %10s %10s", pt.QD, metric.FormatCount(int64(fp.IOPS+0.5)),
				fmt.Sprintf("%.1f", fp.Throughput/1e6), metric.FormatCount(int64(fp.MedianIOPS+0.5)), p50, p99, p999)
			switch {
			case pt.Held == nil:
				if sw.SLO != nil {
					b.WriteString("  not judged")
				}
			case c.Knee != nil && *c.Knee == j:
				b.WriteString("  held ← knee")
			case *pt.Held:
				b.WriteString("  held")
			default:
				b.WriteString("  over")
			}
			b.WriteString("\n")
		}
	}
}
