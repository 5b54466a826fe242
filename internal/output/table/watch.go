package table

import (
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

const watchRow = "%-10s %-4s %8s %9s %9s %7s %12s %12s %13s\n"

// watchInterval writes one row of `narrows watch`: this interval's round
// trips, and the last short stream's figures in each direction.
func (t *Writer) watchInterval(iv result.Interval) error {
	w := iv.Watch
	if w == nil {
		return nil
	}
	var err error
	if t.header != result.ProbeWatch {
		t.header = result.ProbeWatch
		_, err = fmt.Fprintf(t.w, watchRow, "elapsed", "up", "trips/s", "p50", "p99", "loaded", "↑ stream", "↓ stream", "RPM ↑/↓")
	}
	up := "down"
	if w.Up {
		up = "up"
	}
	p50, p99 := "-", "-"
	if w.RoundTrips > 0 {
		p50, p99 = dur(w.RTT.P50), dur(w.RTT.P99)
	}
	thr := map[string]string{result.DirUp: "-", result.DirDown: "-"}
	rpm := map[string]string{result.DirUp: "-", result.DirDown: "-"}
	for _, s := range w.Streams {
		thr[s.Direction] = metric.FormatBitRate(s.Throughput)
		if s.RPM > 0 {
			rpm[s.Direction] = fmt.Sprintf("%.0f", s.RPM)
		}
	}
	// Elapsed time to the second, or to 10 ms at intervals shorter than one.
	step := time.Second
	if iv.End.D()-iv.Start.D() < time.Second {
		step = 10 * time.Millisecond
	}
	elapsed := iv.End.D().Round(step).String()
	_, err2 := fmt.Fprintf(t.w, watchRow, elapsed, up, fmt.Sprintf("%.1f", w.Rate), p50, p99, metric.FormatCount(w.LoadedTrips),
		thr[result.DirUp], thr[result.DirDown], rpm[result.DirUp]+"/"+rpm[result.DirDown])
	if err == nil {
		err = err2
	}
	return err
}

// watchSummary writes what a watch saw over its whole run.
func watchSummary(b *strings.Builder, w *result.Watch) {
	fmt.Fprintf(b, "watched %s: %s round trips", w.Duration.D().Truncate(time.Second), metric.FormatCount(w.RoundTrips))
	if w.Down > 0 {
		fmt.Fprintf(b, ", the agent out of reach for %s", w.Down.D().Truncate(time.Millisecond))
	}
	fmt.Fprintf(b, ", %d session(s)\n", w.Sessions)
	fmt.Fprintf(b, "%-8s %12s %9s %9s %9s %9s\n", "load", "round trips", "p50", "p90", "p99", "max")
	idle := w.RoundTrips - w.LoadedN
	for _, r := range []struct {
		name string
		n    int64
		l    result.Latency
	}{{result.LoadIdle, idle, w.Idle}, {result.LoadLoaded, w.LoadedN, w.Loaded}} {
		if r.n == 0 {
			fmt.Fprintf(b, "%-8s %12s %9s %9s %9s %9s\n", r.name, "0", "-", "-", "-", "-")
			continue
		}
		fmt.Fprintf(b, "%-8s %12s %9s %9s %9s %9s\n", r.name, metric.FormatCount(r.n), dur(r.l.P50), dur(r.l.P90), dur(r.l.P99), dur(r.l.Max))
	}
	for _, s := range w.Streams {
		fmt.Fprintf(b, "last stream %-4s %s", s.Direction, metric.FormatBitRate(s.Throughput))
		if s.RPM > 0 {
			fmt.Fprintf(b, ", responsiveness %.0f RPM (%d round trips)", s.RPM, s.Loaded)
		}
		b.WriteString("\n")
	}
	var errs []string
	for _, k := range result.WatchErrorKinds {
		if n := w.Errors[k]; n > 0 {
			errs = append(errs, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(b, "errors: %s\n", strings.Join(errs, ", "))
	}
}
