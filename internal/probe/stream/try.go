package stream

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/hostchange"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// errNotTried ends a try whose first change could not be made: it says
// why in its result, and it is not an error of the run.
var errNotTried = errors.New("not tried")

// asIsRuns runs one single stream as is, as a try's (PhaseAsIs).
func asIsRuns(ctx context.Context, s *client.Session, cfg Config, emit probe.Emit) func() ([]result.StreamRun, error) {
	cfg.TryRPS, cfg.TryOffloads, cfg.steered, cfg.offloads = false, false, nil, nil
	return func() ([]result.StreamRun, error) {
		var far *sysinfo.TCPBuffers
		runs, _, err := runPhase(ctx, s, cfg, result.PhaseAsIs, 1, emit, &far)
		return runs, err
	}
}

// notMade is a tried run's change (what) that could not be made: for
// the first, why (the try's words for it) says so and the try is not
// tried (errNotTried); for a later one, the run's error.
func notMade(first bool, why *string, what string, err error) error {
	if first {
		*why = what + ": " + err.Error()
		return errNotTried
	}
	return fmt.Errorf("%s: %w", what, err)
}

// refusedFirst is the words of the agent's refusal of a try's first
// tried run ("" where err, of that run, is not one): nothing was tried.
// A later refusal ends the try, unjudged (tryPairs).
func refusedFirst(first bool, runs []result.StreamRun, err error) string {
	var refused *client.Refusal
	if first && len(runs) == 0 && errors.As(err, &refused) {
		return "the agent refused it: " + refused.Message
	}
	return ""
}

// triedRun runs one tried stream with its change made and undone around
// it, and says whether the try may go on: not when its change was not
// put back, or another program changed it while the run ran (the run
// did not run as the try says). errNotTried: the first change could not
// be made, and the try says why.
type triedRun func(first bool) (runs []result.StreamRun, goOn bool, err error)

// tryPairs judges a try: the single stream's run (its rate, single) is
// the first pair's as-is run, then single streams, tried (tried) and as
// is (asIs),
// in turn, the tried one first in every second pair (a machine drifting
// steadily moves both alike), until the gain is told from noise or
// result.MaxTryPairs ran. Its runs go into res.Runs. It returns nil where
// nothing was tried.
func tryPairs(ctx context.Context, res *result.Stream, single float64, asIs func() ([]result.StreamRun, error), tried triedRun) (*result.TryGain, error) {
	g := &result.TryGain{Verdict: result.TryUnjudged}
	// one runs one stream as is (tried false) or tried, and returns its
	// rate, 0 where it did not run to its end.
	one := func(isTried, first bool) (rate float64, goOn bool, err error) {
		var runs []result.StreamRun
		goOn = true
		if isTried {
			runs, goOn, err = tried(first)
		} else {
			runs, err = asIs()
		}
		res.Runs = append(res.Runs, runs...)
		if len(runs) == 1 && runs[0].Stopped == "" {
			rate = runs[0].Throughput
		}
		return rate, goOn, err
	}
	for pair := 0; pair < result.MaxTryPairs; pair++ {
		var p result.TryPair
		var goOn bool
		var err error
		if pair == 0 {
			p.AsIs = single
			p.Tried, goOn, err = one(true, true)
			if errors.Is(err, errNotTried) {
				return nil, nil
			}
		} else if pair%2 == 1 {
			if p.Tried, goOn, err = one(true, false); err == nil && p.Tried > 0 && goOn {
				p.AsIs, _, err = one(false, false)
			}
		} else {
			if p.AsIs, _, err = one(false, false); err == nil && p.AsIs > 0 {
				p.Tried, goOn, err = one(true, false)
			}
		}
		if p.AsIs > 0 && p.Tried > 0 {
			g.Pairs = append(g.Pairs, p)
		}
		judged := judgeTry(g)
		var refused *client.Refusal
		switch {
		case errors.As(err, &refused):
			// The agent allowed the first tried run: a later refusal
			// (another client's change in place there meanwhile) ends
			// the try, not the run.
			g.Verdict, g.Why = result.TryUnjudged, fmt.Sprintf("the agent refused a run after %s: %s", metric.Plural(int64(len(g.Pairs)), "pair"), refused.Message)
			return g, nil
		case err != nil || ctx.Err() != nil:
			g.Verdict, g.Why = result.TryUnjudged, fmt.Sprintf("the run ended after %s, before the pairs decided", metric.Plural(int64(len(g.Pairs)), "pair"))
			return g, err
		case !goOn:
			// The change was not as the try says: what it told is
			// not believed (the advisor says why, from the change).
			g.Verdict, g.Why = result.TryUnjudged, "the try stopped after a tried run whose change was undone while it ran or could not be put back"
			return g, nil
		case p.AsIs == 0 || p.Tried == 0:
			g.Verdict, g.Why = result.TryUnjudged, "a stream of the try did not run to its end"
			return g, nil
		case judged && len(g.Pairs) >= result.MinTryPairs:
			return g, nil
		}
	}
	// Unjudged: judgeTry left it so.
	g.Why = fmt.Sprintf("after %d pairs of runs the gain, %.2f× (%.2f-%.2f), is neither clearly %.1f× or more nor clearly less",
		len(g.Pairs), g.Ratio, g.RatioLow, g.RatioHigh, result.TryGainAt)
	return g, nil
}

// judgeTry sets g's ratio, its interval and its verdict from its pairs,
// and says whether it is judged: helped where the tried runs carried
// more beyond noise (the interval above 1×) and TryGainAt or more, no
// gain where the interval's top is under TryGainAt. It judges the
// figures as printed, to two decimals: "1.10×" is never called under
// 1.1×, nor "1.10" the interval's top under it.
func judgeTry(g *result.TryGain) bool {
	logs := make([]float64, len(g.Pairs))
	for i, p := range g.Pairs {
		logs[i] = math.Log(p.Tried / p.AsIs)
	}
	g.Verdict, g.Ratio, g.RatioLow, g.RatioHigh = result.TryUnjudged, 0, 0, 0
	if len(logs) == 0 {
		return false
	}
	r2 := func(x float64) float64 { return math.Round(100*x) / 100 }
	m, h := metric.MeanCI(logs)
	g.Ratio = r2(math.Exp(m))
	if len(logs) < 2 {
		return false
	}
	g.RatioLow, g.RatioHigh = r2(math.Exp(m-h)), r2(math.Exp(m+h))
	switch {
	case g.RatioLow > 1 && g.Ratio >= result.TryGainAt:
		g.Verdict = result.TryHelped
	case g.RatioHigh < result.TryGainAt:
		g.Verdict = result.TryNoGain
	default:
		return false
	}
	return true
}

// trySteered runs --try-rps: pairs of single streams, as is and with the
// receiving end's busiest core of the single stream's run relieved of
// its receive's protocol work, in turn (tryPairs). The agent steers when
// it receives (forward, with its operator's --allow-try), this host when
// it does (reverse, as root), for each steered run, and puts it back
// after it. What cannot be tried is said in res.Steering.Error, and is
// not an error of the run.
func trySteered(ctx context.Context, s *client.Session, cfg Config, res *result.Stream, emit probe.Emit) error {
	st := &result.Steering{End: result.EndAgent}
	res.Steering = st
	if cfg.Direction == wire.Reverse {
		st.End = result.EndClient
	}
	single := firstSingle(res)
	var core *result.CoreLoad
	if single != nil && single.Cores != nil {
		core = single.Cores.Remote
		if st.End == result.EndClient {
			core = single.Cores.Local
		}
	}
	switch {
	case cfg.Direction == wire.Bidir:
		st.Error = "--try-rps steers the receiving end of one direction: run it without --bidir"
		return nil
	case single == nil || single.Throughput <= 0 || single.Stopped != "":
		st.Error = "no single stream ran to its end to steer after"
		return nil
	case core == nil:
		st.Error = "the receiving end's cores were not read in the single stream's run: no core to move its work off"
		return nil
	case st.End == result.EndAgent && !s.Limits.AllowTry:
		st.Error = probe.TryNotAllowed("--try-rps")
		return nil
	}
	st.OffCore = core.Core
	one := cfg
	one.TryRPS, one.TryOffloads = false, false
	dev := sysinfo.InterfaceName(s.LocalAddr())
	tried := func(first bool) ([]result.StreamRun, bool, error) {
		ch := &result.Steering{End: st.End, OffCore: st.OffCore}
		undo := func(*result.Steering) {}
		if st.End == result.EndAgent {
			one.steered = ch
		} else {
			here, u, err := hostchange.SteerRPS(dev, core.Core)
			if err != nil {
				return nil, false, notMade(first, &st.Error, "this host's receive steering", err)
			}
			here.End = result.EndClient
			ch, undo = here, u
		}
		var far *sysinfo.TCPBuffers
		runs, _, err := runPhase(ctx, s, one, result.PhaseSteered, 1, emit, &far)
		undo(ch)
		if why := refusedFirst(first, runs, err); why != "" {
			st.Error = why
			return nil, false, errNotTried
		}
		ch.Gain = nil // an agent's account holds no judgement
		if first {
			*st = *ch
		} else {
			st.Restored = st.Restored && ch.Restored
			if st.Error == "" {
				st.Error = ch.Error
			}
		}
		return runs, ch.Restored && ch.Error == "", err
	}
	g, err := tryPairs(ctx, res, single.Throughput, asIsRuns(ctx, s, cfg, emit), tried)
	st.Gain = g
	return err
}

// tryOffloads runs --try-offloads: pairs of single streams, as is and
// with the offloads each end's part uses turned on where they are off,
// in turn (tryPairs): this host's as root, the agent's with its
// operator's --allow-try, turned on for each such run and off again
// after it. Both ends must be able to change, or nothing is tried: the
// rate with every offload on is the question. What cannot be tried is
// said in res.Offloads.Why, and is not an error of the run.
func tryOffloads(ctx context.Context, s *client.Session, cfg Config, res *result.Stream, emit probe.Emit) error {
	try := &result.OffloadTry{}
	res.Offloads = try
	here, there := result.RoleSending, result.RoleReceiving
	if cfg.Direction == wire.Reverse {
		here, there = there, here
	}
	single := firstSingle(res)
	switch {
	case cfg.Direction == wire.Bidir:
		try.Why = "--try-offloads turns on the offloads of one direction's sender and receiver: run it without --bidir"
		return nil
	case !s.Limits.AllowTry:
		try.Why = probe.TryNotAllowed("--try-offloads")
		return nil
	case single == nil || single.Throughput <= 0 || single.Stopped != "":
		try.Why = "no single stream ran to its end to try against"
		return nil
	}
	dev := sysinfo.InterfaceName(s.LocalAddr())
	one := cfg
	one.TryRPS, one.TryOffloads = false, false
	tried := func(first bool) ([]result.StreamRun, bool, error) {
		local, undo, err := hostchange.OffloadsOn(dev, here)
		if err != nil {
			return nil, false, notMade(first, &try.Why, "this host's offloads", err)
		}
		local.End = result.EndClient
		far := &result.OffloadChange{End: result.EndAgent, Role: there}
		one.offloads = far
		var bufs *sysinfo.TCPBuffers
		runs, _, err := runPhase(ctx, s, one, result.PhaseOffloads, 1, emit, &bufs)
		undo(local)
		if why := refusedFirst(first, runs, err); why != "" {
			try.Why, try.Changes = why, []result.OffloadChange{*local}
			return nil, false, errNotTried
		}
		now := []result.OffloadChange{*local, *far}
		if first {
			try.Changes = now
		} else {
			for i := range try.Changes {
				try.Changes[i].Restored = try.Changes[i].Restored && now[i].Restored
				if try.Changes[i].Error == "" {
					try.Changes[i].Error = now[i].Error
				}
			}
		}
		return runs, try.Changed() && held(now), err
	}
	g, err := tryPairs(ctx, res, single.Throughput, asIsRuns(ctx, s, cfg, emit), tried)
	if try.Changed() {
		try.Gain = g
	}
	return err
}

// held says whether a run's offload changes were in place for it and
// put back after: not where an end could not turn one off again, or
// another program turned one off meanwhile. An end that turned nothing
// on, or did not say (an agent from before --try-offloads), holds.
func held(changes []result.OffloadChange) bool {
	for _, c := range changes {
		if len(c.On) > 0 && (!c.Restored || c.Error != "") {
			return false
		}
	}
	return true
}

// firstSingle is res's first single stream's run (nil: none ran).
func firstSingle(res *result.Stream) *result.StreamRun {
	for i := range res.Runs {
		if res.Runs[i].Phase == result.PhaseSingle {
			return &res.Runs[i]
		}
	}
	return nil
}
