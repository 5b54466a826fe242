package advisor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// TestBufferbloatHeadlineOneStatistic: the headline's report time and its
// round trips are the same statistic, named (issue 25, defect 12: a
// report's time from the mean beside a queue from the median rise).
func TestBufferbloatHeadlineOneStatistic(t *testing.T) {
	ms := func(v float64) result.Seconds { return result.Seconds(time.Duration(v * float64(time.Millisecond))) }
	l := &result.Loaded{Config: result.LoadedConfig{Streams: 4, Direction: result.DirUp, Queries: 5000},
		Idle:   result.LoadedPhase{RoundTrips: 500, Latency: result.Latency{Min: ms(8.07), Mean: ms(8.2), P50: ms(8.1), P99: ms(9)}},
		Loaded: result.LoadedPhase{RoundTrips: 500, Latency: result.Latency{Min: ms(8.1), Mean: ms(24.7), P50: ms(18.7), P99: ms(60)}},
		Rise:   ms(10.6), Throughput: 288e6}
	fs := underLoad(l)
	if len(fs) == 0 || fs[0].Code != "rr.bufferbloat" {
		t.Fatalf("findings %+v", fs)
	}
	s := fs[0].Summary
	q := float64(l.Config.Queries)
	for _, want := range []string{
		fmt.Sprintf("%.2f s of round trips instead of %.2f s", q*l.Loaded.Mean.D().Seconds(), q*l.Idle.Mean.D().Seconds()),
		"the mean round trip rises from " + metric.FormatDuration(l.Idle.Mean.D()) + " to " + metric.FormatDuration(l.Loaded.Mean.D()),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("headline %q lacks %q", s, want)
		}
	}
	if rise := metric.FormatDuration(l.Rise.D()); strings.Contains(s, rise) {
		t.Errorf("headline %q quotes the median rise %s beside the means", s, rise)
	}
	if d := fs[0].Detail; !strings.Contains(d, "median round trip") || !strings.Contains(d, metric.FormatDuration(l.Loaded.P50.D())) {
		t.Errorf("detail %q does not name the median it quotes", d)
	}
}
