package table

import (
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

const fleetWatchRow = "%-10s %6s %6s %6s %9s  %-40s %s\n"

// fleetWatchInterval writes one row of `narrows fleet watch` for the
// whole fleet: how many links are up, the slowest by p99 and the down
// ones by name (a few of each: the row's width does not grow with the
// fleet).
func (t *Writer) fleetWatchInterval(iv result.Interval) error {
	f := iv.FleetWatch
	if f == nil {
		return nil
	}
	if t.header != result.ProbeFleetWatch {
		t.header = result.ProbeFleetWatch
		if _, err := fmt.Fprintf(t.w, fleetWatchRow, "elapsed", "links", "up", "down", "trips/s", "slowest p99", "down"); err != nil {
			return err
		}
	}
	var slow, down []string
	for _, l := range f.Slowest {
		slow = append(slow, l.Name+" "+dur(l.P99))
	}
	for _, l := range f.DownLinks {
		down = append(down, l.Name)
	}
	if more := f.Down - len(f.DownLinks); more > 0 {
		down = append(down, fmt.Sprintf("+%d", more))
	}
	list := func(s []string) string {
		if len(s) == 0 {
			return "-"
		}
		return strings.Join(s, ", ")
	}
	step := time.Second
	if iv.End.D()-iv.Start.D() < time.Second {
		step = 10 * time.Millisecond
	}
	_, err := fmt.Fprintf(t.w, fleetWatchRow, iv.End.D().Round(step).String(), fmt.Sprint(f.Links), fmt.Sprint(f.Up), fmt.Sprint(f.Down),
		fmt.Sprintf("%.1f", f.Rate), list(slow), list(down))
	return err
}

// fleetWatchSummary writes each link's whole watch, one row a link, and
// the last failure of each link that had one.
func fleetWatchSummary(b *strings.Builder, f *result.FleetWatch) {
	fmt.Fprintf(b, "watched %s of %s from %s", metric.Plural(int64(len(f.Links)), "link"), f.Duration.D().Truncate(time.Second), f.Targets)
	if f.Reloads > 0 || f.ReloadFailures > 0 {
		fmt.Fprintf(b, "; the targets reloaded %d time(s), %d refused", f.Reloads, f.ReloadFailures)
	}
	b.WriteString("\n")
	const row = "%-20s %-24s %11s %9s %9s %9s %9s %8s %7s\n"
	fmt.Fprintf(b, row, "link", "address", "round trips", "p50", "p99", "max", "down", "sessions", "errors")
	var failed []string
	for _, l := range f.Links {
		w := l.Watch
		if w == nil {
			continue
		}
		var errs int64
		for _, n := range w.Errors {
			errs += n
		}
		p50, p99, mx := "-", "-", "-"
		if w.RoundTrips > w.LoadedN {
			p50, p99, mx = dur(w.Idle.P50), dur(w.Idle.P99), dur(w.Idle.Max)
		}
		fmt.Fprintf(b, row, l.Name, l.Addr, metric.FormatCount(w.RoundTrips), p50, p99, mx, w.Down.D().Truncate(time.Millisecond),
			fmt.Sprint(w.Sessions), fmt.Sprint(errs))
		if w.LastError != "" {
			failed = append(failed, fmt.Sprintf("  %s: %s", l.Name, w.LastError))
		}
	}
	if len(failed) > 0 {
		b.WriteString("last failure of each link that had one:\n" + strings.Join(failed, "\n") + "\n")
	}
}
