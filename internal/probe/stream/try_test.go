package stream

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/result"
)

// TestJudgeTry: a try's verdict from its pairs' ratios (tried / as is),
// on their logarithms' 95% interval, as printed to two decimals.
func TestJudgeTry(t *testing.T) {
	pairs := func(ratios ...float64) *result.TryGain {
		g := &result.TryGain{}
		for _, r := range ratios {
			g.Pairs = append(g.Pairs, result.TryPair{AsIs: 1e9, Tried: r * 1e9})
		}
		return g
	}
	for _, c := range []struct {
		name    string
		ratios  []float64
		judged  bool
		verdict string
		ratio   float64
	}{
		{"none yet", nil, false, result.TryUnjudged, 0},
		{"one pair is never judged", []float64{1.5}, false, result.TryUnjudged, 1.5},
		{"a clear gain", []float64{1.45, 1.52, 1.48}, true, result.TryHelped, 1.48},
		{"clearly none", []float64{1.01, 0.99, 1.02}, true, result.TryNoGain, 1.01},
		{"slower is none", []float64{0.8, 0.82, 0.79}, true, result.TryNoGain, 0.80},
		// Real (the interval above 1×) but under 1.1×: not a gain; its
		// top is over 1.1×, so not clearly none either.
		{"real, and small", []float64{1.05, 1.12, 1.07, 1.09}, false, result.TryUnjudged, 1.08},
		// Over 1.1× on the mean, the runs as scattered as the gain.
		{"scattered", []float64{1.5, 0.95, 1.3}, false, result.TryUnjudged, 1.23},
		// Two pairs: Student's t of 12.7 keeps all but the steadiest
		// unjudged.
		{"two steady pairs", []float64{1.50, 1.51}, true, result.TryHelped, 1.50},
		{"two pairs apart", []float64{1.3, 1.6}, false, result.TryUnjudged, 1.44},
	} {
		g := pairs(c.ratios...)
		judged := judgeTry(g)
		if judged != c.judged || g.Verdict != c.verdict || g.Ratio != c.ratio {
			t.Errorf("%s: judged %v %s %.2f (%.2f-%.2f), want %v %s %.2f", c.name, judged, g.Verdict, g.Ratio, g.RatioLow, g.RatioHigh, c.judged, c.verdict, c.ratio)
		}
		if len(c.ratios) >= 2 && !(g.RatioLow <= g.Ratio && g.Ratio <= g.RatioHigh) {
			t.Errorf("%s: %.2f outside its interval %.2f-%.2f", c.name, g.Ratio, g.RatioLow, g.RatioHigh)
		}
	}
	// The bound as printed: a mean that prints 1.10 with its interval
	// above 1× is a gain.
	g := pairs(1.0996, 1.0996, 1.0996)
	if !judgeTry(g) || g.Verdict != result.TryHelped {
		t.Errorf("1.0996 three times: %s %.2f (%.2f-%.2f)", g.Verdict, g.Ratio, g.RatioLow, g.RatioHigh)
	}
}

// script plays a try's runs: each call of asIs or tried takes the next
// rate of its kind (a rate of 0 is a run stopped early), and the phases
// come out in res.Runs in the order they ran.
type script struct {
	asIs, tried []float64
	// refuseTried is the tried run (from 1) the agent refuses; notInPlace
	// the tried run whose change another program undid; cancel the run
	// (of either kind, from 1) after which the context ends.
	refuseTried, notInPlace, cancel int
	nAsIs, nTried, n                int
	stop                            context.CancelFunc
}

func (p *script) run(phase string, rate float64) []result.StreamRun {
	p.n++
	if p.n == p.cancel {
		p.stop()
	}
	r := result.StreamRun{Phase: phase, Streams: 1, Throughput: rate}
	if rate == 0 {
		r.Stopped = "agent: stopped"
	}
	return []result.StreamRun{r}
}

func (p *script) asIsRun() ([]result.StreamRun, error) {
	p.nAsIs++
	return p.run(result.PhaseAsIs, p.asIs[(p.nAsIs-1)%len(p.asIs)]), nil
}

func (p *script) triedRun(first bool) ([]result.StreamRun, bool, error) {
	p.nTried++
	if first != (p.nTried == 1) {
		panic("first is the first tried run only")
	}
	if p.nTried == p.refuseTried {
		return nil, false, &client.Refusal{Addr: "agent:7447", Message: "another run's change is in place on this host"}
	}
	return p.run(result.PhaseSteered, p.tried[(p.nTried-1)%len(p.tried)]), p.nTried != p.notInPlace, nil
}

// TestTryPairs: a try's runs come in pairs in turn, the single stream's
// the first pair's as is, until judged (three pairs at least) or eight
// ran; what ends it early says so, and only a first change that could
// not be made is "not tried".
func TestTryPairs(t *testing.T) {
	const S, T = result.PhaseSingle, result.PhaseSteered
	A := result.PhaseAsIs
	for _, c := range []struct {
		name    string
		p       script
		verdict string
		pairs   int
		order   []string
		why     string
	}{
		{"a clear gain, in three pairs", script{asIs: []float64{1e9}, tried: []float64{1.5e9}}, result.TryHelped, 3,
			[]string{S, T, T, A, A, T}, ""},
		{"none, in three pairs", script{asIs: []float64{1e9}, tried: []float64{1.01e9, 0.99e9}}, result.TryNoGain, 3,
			[]string{S, T, T, A, A, T}, ""},
		{"not told in eight", script{asIs: []float64{1e9}, tried: []float64{0.95e9, 1.32e9}}, result.TryUnjudged, 8,
			[]string{S, T, T, A, A, T, T, A, A, T, T, A, A, T, T, A}, "after 8 pairs of runs the gain, 1.12× ("},
		{"refused later", script{asIs: []float64{1e9}, tried: []float64{1.5e9}, refuseTried: 2}, result.TryUnjudged, 1,
			[]string{S, T}, "the agent refused a run after 1 pair: another run's change is in place on this host"},
		{"undone meanwhile", script{asIs: []float64{1e9}, tried: []float64{1.5e9}, notInPlace: 2}, result.TryUnjudged, 1,
			[]string{S, T, T}, "whose change was undone while it ran or could not be put back"},
		{"a run stopped", script{asIs: []float64{0}, tried: []float64{1.5e9}}, result.TryUnjudged, 1,
			[]string{S, T, T, A}, "did not run to its end"},
		{"interrupted", script{asIs: []float64{1e9}, tried: []float64{1.5e9}, cancel: 3}, result.TryUnjudged, 2,
			[]string{S, T, T, A}, "the run ended after 2 pairs"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		p := c.p
		p.stop = cancel
		res := &result.Stream{Runs: []result.StreamRun{{Phase: S, Streams: 1, Throughput: 1e9}}}
		g, err := tryPairs(ctx, res, res.Runs[0].Throughput, p.asIsRun, p.triedRun)
		cancel()
		if err != nil || g == nil {
			t.Errorf("%s: %+v, %v", c.name, g, err)
			continue
		}
		var order []string
		for _, r := range res.Runs {
			order = append(order, r.Phase)
		}
		if g.Verdict != c.verdict || len(g.Pairs) != c.pairs || !slices.Equal(order, c.order) || !strings.Contains(g.Why, c.why) {
			t.Errorf("%s: %s in %d pairs (%s), runs %v; want %s in %d, %v, why %q", c.name, g.Verdict, len(g.Pairs), g.Why, order, c.verdict, c.pairs, c.order, c.why)
		}
	}
	// The first change could not be made: nothing tried, no judgement.
	res := &result.Stream{Runs: []result.StreamRun{{Phase: result.PhaseSingle, Throughput: 1e9}}}
	g, err := tryPairs(context.Background(), res, res.Runs[0].Throughput, func() ([]result.StreamRun, error) {
		t.Error("a run as is after nothing was tried")
		return nil, nil
	}, func(bool) ([]result.StreamRun, bool, error) { return nil, false, errNotTried })
	if g != nil || err != nil || len(res.Runs) != 1 {
		t.Errorf("not tried: %+v, %v, %d runs", g, err, len(res.Runs))
	}
}

// TestOffloadsHeld: a try goes on after a run whose changes were in
// place and put back, or whose agent turned nothing on or did not say;
// not after one an end could not put back or another program undid.
func TestOffloadsHeld(t *testing.T) {
	here := result.OffloadChange{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", On: []string{"tso"}, Restored: true}
	for _, c := range []struct {
		name string
		far  result.OffloadChange
		held bool
	}{
		{"both on and put back", result.OffloadChange{End: result.EndAgent, Role: result.RoleReceiving, On: []string{"gro"}, Restored: true}, true},
		{"the agent's on already", result.OffloadChange{End: result.EndAgent, Role: result.RoleReceiving, Restored: true}, true},
		{"an agent that did not say", result.OffloadChange{End: result.EndAgent, Role: result.RoleReceiving, Error: "the agent did not say what it turned on"}, true},
		{"not put back", result.OffloadChange{End: result.EndAgent, Role: result.RoleReceiving, On: []string{"gro"}, Error: "turning gro off again: operation not permitted"}, false},
		{"turned off meanwhile", result.OffloadChange{End: result.EndAgent, Role: result.RoleReceiving, On: []string{"gro"}, Restored: true,
			Error: "another program turned eth1's gro off while the test ran: the test did not run with it on"}, false},
	} {
		if got := held([]result.OffloadChange{here, c.far}); got != c.held {
			t.Errorf("%s: held %v, want %v", c.name, got, c.held)
		}
	}
}
