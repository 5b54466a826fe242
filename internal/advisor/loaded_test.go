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

// TestSelfQueueWithoutASharedQueue: behind flow queueing a separate
// connection sees no queue, yet the loaded connections wait behind their
// own backlog; that is said beside "barely moves", in the words of a
// path that queues connections apart. Behind a shared queue it is said
// beside the bufferbloat, and not at all when the loaded connections'
// round trip is the separate one's.
func TestSelfQueueWithoutASharedQueue(t *testing.T) {
	ms := func(v float64) result.Seconds { return result.Seconds(time.Duration(v * float64(time.Millisecond))) }
	phase := func(p50 float64) result.LoadedPhase {
		return result.LoadedPhase{RoundTrips: 500, Latency: result.Latency{Min: ms(p50 - 0.1), Mean: ms(p50 + 0.1), P50: ms(p50), P99: ms(p50 + 1)}}
	}
	tests := []struct {
		name            string
		loaded, rise    float64
		self            float64
		want            []string
		wantDetailWords string
	}{
		{"flow-queued: calm beside, a queue of their own", 10.2, 0.2, 45, []string{"rr.under_load_ok", "rr.self_queue"}, "queues each connection apart"},
		{"flow-queued, their own round trip as calm", 10.2, 0.2, 11, []string{"rr.under_load_ok"}, ""},
		{"one shared queue", 30, 20, 62, []string{"rr.bufferbloat", "rr.self_queue"}, "as well as the queue"},
		{"one shared queue, all wait alike", 30, 20, 31, []string{"rr.bufferbloat"}, ""},
	}
	for _, tc := range tests {
		l := &result.Loaded{Config: result.LoadedConfig{Streams: 4, Direction: result.DirUp, Queries: 5000},
			Idle: phase(10), Loaded: phase(tc.loaded), Rise: ms(tc.rise), Self: ms(tc.self), Throughput: 80e6}
		fs := underLoad(l)
		var codes []string
		for _, f := range fs {
			codes = append(codes, f.Code)
			if f.Code == "rr.self_queue" && !strings.Contains(f.Detail, tc.wantDetailWords) {
				t.Errorf("%s: self_queue's detail %q lacks %q", tc.name, f.Detail, tc.wantDetailWords)
			}
		}
		if strings.Join(codes, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: said %v, want %v", tc.name, codes, tc.want)
		}
	}
}

// TestTailNamesTheCPULimit: a tail under load with no queue on the path
// names this end's CPU limit where it held the process off the CPU during
// the load, and the hosts' CPUs to look at where it did not (or there is
// none).
func TestTailNamesTheCPULimit(t *testing.T) {
	ms := func(v float64) result.Seconds { return result.Seconds(time.Duration(v * float64(time.Millisecond))) }
	base := result.Loaded{Config: result.LoadedConfig{Streams: 4, Direction: result.DirUp, Queries: 5000},
		Idle:   result.LoadedPhase{RoundTrips: 2000, Latency: result.Latency{Min: ms(2.1), Mean: ms(2.3), P50: ms(2.2), P99: ms(2.5)}},
		Loaded: result.LoadedPhase{RoundTrips: 1500, Latency: result.Latency{Min: ms(2.1), Mean: ms(6.7), P50: ms(2.4), P99: ms(78)}},
		Rise:   ms(0.2), Throughput: 16e6}
	for _, c := range []struct {
		name         string
		cores, share float64
		want, not    string
	}{
		{"throttled under the load", 0.05, 0.31, "a CPU limit of 0.05 of a core (its cgroup's quota), which held it off the CPU in 31% of the limit's periods", "two hosts' CPUs"},
		{"a limit that did not bind", 2, 0.01, "the two hosts' CPUs", "CPU limit"},
		{"no limit", 0, 0, "the two hosts' CPUs", "CPU limit"},
	} {
		l := base
		l.CPULimitCores, l.LoadedThrottledShare = c.cores, c.share
		fs := underLoad(&l)
		if len(fs) == 0 || fs[0].Code != "rr.under_load_tail" {
			t.Fatalf("%s: findings %s", c.name, codes(fs))
		}
		if d := fs[0].Detail; !strings.Contains(d, c.want) || strings.Contains(d, c.not) {
			t.Errorf("%s: detail %q: want %q, not %q", c.name, d, c.want, c.not)
		}
	}
}

// TestUnderLoadUnfilled: a load that did not reach the path's narrowest
// hop (no packet lost, its own round trip the idle one: its streams held
// by their windows) tested no queue, and is not called "barely moves"; a
// load that lost packets there, or queued on its own connections, did.
func TestUnderLoadUnfilled(t *testing.T) {
	ms := func(v float64) result.Seconds { return result.Seconds(time.Duration(v * float64(time.Millisecond))) }
	phase := func(p50 float64) result.LoadedPhase {
		return result.LoadedPhase{RoundTrips: 500, Latency: result.Latency{Min: ms(p50 - 0.1), Mean: ms(p50 + 0.1), P50: ms(p50), P99: ms(p50 + 1)}}
	}
	for _, c := range []struct {
		name        string
		self        float64
		retransmits int64
		samples     int
		want        string
	}{
		{"held by their windows (the testbed's 30 ms line, 128 KiB buffers)", 30.4, 0, 12, "rr.under_load_unfilled"},
		{"lost packets at the hop: it filled the path", 30.4, 57, 12, "rr.under_load_ok"},
		{"a queue of their own (flow queueing)", 45, 0, 12, "rr.under_load_ok"},
		{"no TCP state of the senders: as before", 0, 0, 0, "rr.under_load_ok"},
	} {
		l := &result.Loaded{Config: result.LoadedConfig{Streams: 4, Direction: result.DirUp, Queries: 5000},
			Idle: phase(30.3), Loaded: phase(30.9), Rise: ms(0.6), Self: ms(c.self), SelfSamples: c.samples, Retransmits: c.retransmits, Throughput: 81.9e6}
		fs := underLoad(l)
		if len(fs) == 0 || fs[0].Code != c.want {
			t.Errorf("%s: said %s, want %s", c.name, codes(fs), c.want)
			continue
		}
		if c.want == "rr.under_load_unfilled" && (!strings.Contains(fs[0].Summary, "did not fill the path") || strings.Contains(fs[0].Summary, "barely")) {
			t.Errorf("%s: %q", c.name, fs[0].Summary)
		}
	}
}

// TestTailOfLostPackets: a tail of TCP's least retransmission timeout on
// a path many times faster is packets lost and sent again, said so (the
// testbed's 2-packet queue under a load: p99 211 ms on a 2 ms line); a
// tail under it is the hosts', as before.
func TestTailOfLostPackets(t *testing.T) {
	ms := func(v float64) result.Seconds { return result.Seconds(time.Duration(v * float64(time.Millisecond))) }
	for _, c := range []struct {
		p99       float64
		want, not string
	}{{211, "lost and sent again", "busy virtual switch"}, {78, "busy virtual switch", "lost and sent again"}} {
		l := &result.Loaded{Config: result.LoadedConfig{Streams: 4, Direction: result.DirUp, Queries: 5000},
			Idle:   result.LoadedPhase{RoundTrips: 2000, Latency: result.Latency{Min: ms(2), Mean: ms(2.1), P50: ms(2.07), P99: ms(2.18)}},
			Loaded: result.LoadedPhase{RoundTrips: 1500, Latency: result.Latency{Min: ms(2), Mean: ms(7), P50: ms(2.36), P99: ms(c.p99)}},
			Rise:   ms(0.29), Throughput: 17.5e6}
		fs := underLoad(l)
		if len(fs) == 0 || fs[0].Code != "rr.under_load_tail" {
			t.Fatalf("p99 %v ms: findings %s", c.p99, codes(fs))
		}
		if d := fs[0].Detail; !strings.Contains(d, c.want) || strings.Contains(d, c.not) {
			t.Errorf("p99 %v ms: detail %q: want %q, not %q", c.p99, d, c.want, c.not)
		}
	}
}
