package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// fleetNetSummary writes `narrows fleet net`: each replica's rate, its
// share of the median replica's, on the wire, its round trip and
// retransmits, when its Start was sent; each stream's rate when there
// are several; then the fleet's sum, against this host's link.
func fleetNetSummary(b *strings.Builder, f *result.FleetNet) {
	fmt.Fprintf(b, "  %-24s %14s %7s %14s %9s %7s %9s\n", "replica", "received", "median", "on the wire", "rtt", "retr", "began")
	for _, h := range f.Hosts {
		r := h.Stream
		if r == nil {
			fmt.Fprintf(b, "  %-24s %s\n", h.Name, h.Error)
			continue
		}
		share, rtt, retr, began := "-", "-", "-", "-"
		if h.Share > 0 {
			share = fmt.Sprintf("%.0f%%", 100*h.Share)
		}
		if t := r.TCP; t != nil {
			rtt, retr = dur(t.RTT), metric.FormatCount(t.Retransmits)
		}
		if h.StartedAfter != nil {
			began = "+" + metric.FormatDuration(h.StartedAfter.D())
		}
		fmt.Fprintf(b, "  %-24s %14s %7s %14s %9s %7s %9s\n", h.Name, metric.FormatBitRate(r.Throughput), share, wireRate(r.WireThroughput), rtt, retr, began)
		if len(r.PerStream) > 1 {
			var each []string
			for _, p := range r.PerStream {
				each = append(each, metric.FormatBitRate(p))
			}
			fmt.Fprintf(b, "    each stream: %s\n", strings.Join(each, ", "))
		}
		if h.Error != "" {
			fmt.Fprintf(b, "    not counted: %s\n", h.Error)
		} else if r.Stopped != "" {
			fmt.Fprintf(b, "    (stopped: %s)\n", r.Stopped)
		}
	}
	if t := f.Total; t.Hosts > 0 {
		fmt.Fprintf(b, "  %-24s %14s %7s %14s\n", fmt.Sprintf("fleet (%s, %d streams)", metric.Plural(int64(t.Hosts), "replica"), t.Streams),
			metric.FormatBitRate(t.Throughput), "", wireRate(t.WireThroughput))
		fmt.Fprintf(b, "  median replica %s, slowest %s, fastest %s\n", metric.FormatBitRate(t.MedianHost), metric.FormatBitRate(t.Slowest), metric.FormatBitRate(t.Fastest))
	}
	for _, l := range f.Links {
		name := l.Interface
		if name == "" {
			name = "(interface not known)"
		}
		switch {
		case l.Rate > 0:
			from := "its NIC's speed"
			if l.RateFrom == result.RateFromAssumed {
				from = "as given by --assume nic"
			}
			fmt.Fprintf(b, "this host's link %s: %s on the wire, %.0f%% of its %s (%s)\n", name, metric.FormatBitRate(l.WireThroughput), 100*l.Share,
				metric.FormatBitRate(l.Rate), from)
		case l.SameHost:
			fmt.Fprintf(b, "this host's link %s: %s; %s\n", name, metric.FormatBitRate(l.WireThroughput), l.RateUnknown)
		default:
			fmt.Fprintf(b, "this host's link %s: %s on the wire; its rate is not known: %s (give it with --assume nic=RATE)\n", name, metric.FormatBitRate(l.WireThroughput), l.RateUnknown)
		}
	}
	if s := f.Start; s != nil {
		fmt.Fprintf(b, "started together: %d hosts' Start sent %s after the instant at the median, %s at most (skew %s)\n",
			s.Hosts, metric.FormatDuration(s.MedianAfter.D()), metric.FormatDuration(s.MaxAfter.D()), metric.FormatDuration(s.Skew.D()))
	}
}

func wireRate(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	return metric.FormatBitRate(bps)
}
