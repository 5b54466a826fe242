package advisor

import (
	"slices"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// gain is a try's judgement of pairs, each {as is, tried} bit/s, as the
// probe judges it (verdict and interval given here as it would set them).
func gain(verdict string, ratio, low, high float64, pairs ...[2]float64) *result.TryGain {
	g := &result.TryGain{Verdict: verdict, Ratio: ratio, RatioLow: low, RatioHigh: high}
	for _, p := range pairs {
		g.Pairs = append(g.Pairs, result.TryPair{AsIs: p[0], Tried: p[1]})
	}
	return g
}

// untoldGain is a try whose eight pairs told nothing; endedGain one the
// agent ended after two.
func untoldGain() *result.TryGain {
	var pairs [][2]float64
	for i := range result.MaxTryPairs {
		pairs = append(pairs, [2]float64{1e9, []float64{0.95e9, 1.32e9}[i%2]})
	}
	g := gain(result.TryUnjudged, 1.12, 1.01, 1.24, pairs...)
	g.Why = "after 8 pairs of runs the gain, 1.12× (1.01-1.24), is neither clearly 1.1× or more nor clearly less"
	return g
}

func endedGain() *result.TryGain {
	g := gain(result.TryUnjudged, 1.3, 0.2, 8.5, [2]float64{1e9, 1.5e9}, [2]float64{1e9, 1.1e9})
	g.Why = "the agent refused a run after 2 pairs: another run's change is in place on this host"
	return g
}

// TestSteeringWords: --try-rps's answer from its pairs' verdict and
// figures, and when nothing was tried, it did not finish, it was not put
// back, or another program changed it meanwhile.
func TestSteeringWords(t *testing.T) {
	single := []result.StreamRun{{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: 7.2e9}}
	tried := func(g *result.TryGain) *result.Steering {
		return &result.Steering{End: result.EndAgent, Interface: "eth0", Queues: 4, OffCore: 3, CPUs: "0-2", Mask: "00000007", Before: "0", Restored: true, Gain: g}
	}
	helped := gain(result.TryHelped, 1.42, 1.35, 1.49, [2]float64{7.2e9, 10.2e9}, [2]float64{7.0e9, 10.1e9}, [2]float64{7.4e9, 10.5e9})
	for _, c := range []struct {
		name     string
		s        result.Stream
		code     string
		contains []string
	}{
		{"a gain", result.Stream{Runs: single, Steering: tried(helped)}, "stream.rps_helped",
			[]string{"core 3", "in 3 pairs of runs in turn, one stream steered carried 10.3 Gbit/s, 1.42× (1.35-1.49) the 7.20 Gbit/s as is",
				"eth0's 4 receive queues to CPU 0-2", "put back after each steered run", "for q in /sys/class/net/eth0/queues/rx-*/rps_cpus; do echo 00000007 > \"$q\"; done"}},
		{"none", result.Stream{Runs: single, Steering: tried(gain(result.TryNoGain, 1.01, 0.97, 1.05, [2]float64{1e9, 1e9}, [2]float64{1e9, 1.02e9}, [2]float64{1e9, 1.01e9}))},
			"stream.rps_no_gain", []string{"1.01× (0.97-1.05)", "did not hold", "interval lies under 1.1×"}},
		{"not told", result.Stream{Runs: single, Steering: tried(untoldGain())},
			"stream.rps_unjudged", []string{"in 8 pairs of runs", "1.12× (1.01-1.24)", "neither clearly 1.1× or more nor clearly less", "differed from one another as much as the gain",
				"make the change by hand and compare more runs"}},
		{"ended first", result.Stream{Runs: single, Steering: tried(endedGain())},
			"stream.rps_unjudged", []string{"in 2 pairs of runs", "the agent refused a run after 2 pairs", "the try ended before its pairs decided. Run it again."}},
		{"refused", result.Stream{Runs: single, Steering: &result.Steering{End: result.EndAgent, Error: "the agent does not let a test change its settings"}},
			"stream.rps_not_tried", []string{"did not try: the agent does not let"}},
		{"cut short", result.Stream{Runs: single, Steering: tried(&result.TryGain{Verdict: result.TryUnjudged, Why: "a stream of the try did not run to its end"})},
			"stream.rps_not_tried", []string{"did not finish"}},
		{"saved by a narrows of one pair", result.Stream{Runs: append(slices.Clone(single), result.StreamRun{Phase: result.PhaseSteered, Throughput: 1e10}), Steering: tried(nil)},
			"stream.rps_unjudged", []string{"--try-rps ran one stream with the agent's receive steered off core 3", "once (a run saved by a narrows before 2026-11-29): one pair of runs does not tell"}},
		{"saved by a narrows of one pair, cut short", result.Stream{Runs: append(slices.Clone(single), result.StreamRun{Phase: result.PhaseSteered, Throughput: 1e10, Stopped: "interrupted"}), Steering: tried(nil)},
			"stream.rps_not_tried", []string{"did not finish"}},
		{"changed meanwhile", result.Stream{Runs: single, Steering: func() *result.Steering {
			st := tried(helped)
			st.Error = "another program changed eth0's rps_cpus while the test ran (1, not 00000007): the test did not run steered"
			return st
		}()}, "stream.rps_unjudged", []string{"cannot say what steering gives: another program changed eth0's rps_cpus", "stop it for the run"}},
	} {
		f, ok := steering(&c.s)
		expectTry(t, c.name, f, ok, c.code, c.contains)
	}
	// Not put back: it says so, and what to write back.
	st := tried(helped)
	st.Restored, st.Error = false, "putting rps_cpus back: permission denied"
	f, _ := steering(&result.Stream{Runs: single, Steering: st})
	if !strings.Contains(f.Summary, "could not be put back (putting rps_cpus back: permission denied): set eth0's rps_cpus back to 0") {
		t.Errorf("not put back: %s", f.Summary)
	}
	// A name a shell would read otherwise: no command to paste.
	st = tried(helped)
	st.Interface = "e;rm"
	f, _ = steering(&result.Stream{Runs: single, Steering: st})
	if strings.Contains(f.Detail, "for q in") {
		t.Errorf("a command with interface %q: %s", st.Interface, f.Detail)
	}
	if _, ok := steering(&result.Stream{Runs: single}); ok {
		t.Error("a finding without --try-rps")
	}
}

// expectTry: a try's finding is there, with code, and says each of words
// in its summary or detail.
func expectTry(t *testing.T, name string, f result.Finding, ok bool, code string, words []string) {
	t.Helper()
	if !ok || f.Code != code {
		t.Errorf("%s: %v %s, want %s", name, ok, f.Code, code)
		return
	}
	for _, w := range words {
		if !strings.Contains(f.Summary+" "+f.Detail, w) {
			t.Errorf("%s: %q not in %s %s", name, w, f.Summary, f.Detail)
		}
	}
}
