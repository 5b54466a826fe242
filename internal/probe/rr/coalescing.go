package rr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
)

// The coalescing experiment's shape: blocks of round trips, in pairs as
// is and then with the agent's receive coalescing at its least, at least
// MinCoalescingPairs and at most MaxCoalescingPairs, until the pairs'
// differences decide.
const (
	CoalescingBlock    = 2 * time.Second
	MinCoalescingPairs = 4
	MaxCoalescingPairs = 10
)

// The floor below which a difference is no cost: coalescingFloorAbs, or
// coalescingFloorRel of the round trip at the least where that is more
// (a NIC's default timer, 50 µs or so, is 5% of a 1 ms path's round trip
// and 0.25 s of a 5,000-query report: above the floor there).
const (
	coalescingFloorAbs = 2 * time.Microsecond
	coalescingFloorRel = 0.02
)

// costMargin is how wide a cost's 95% margin may be, as a share of it,
// before more pairs are run to narrow it.
const costMargin = 0.10

// coalescingWarmup is a block run first and not counted: the first
// block on a fresh path ran 5% slower than the rest (its CPUs and caches
// still cold), which one pair in four would carry into the verdict.
const coalescingWarmup = time.Second

// TryCoalescing measures what the agent's receive interrupt coalescing
// adds to a round trip, by experiment: after a block not counted
// (coalescingWarmup), blocks of cfg's round trips (its sizes, back to
// back, CoalescingBlock each), in pairs as is and then
// with the agent's interface toward this host at its least coalescing
// (rx-usecs 0, rx-frames 1, adaptive-rx off: the agent changes it for
// the block and puts it back, with its operator's --allow-try). What
// cannot be tried is said in the result (Verdict CoalescingNotTried and
// Why), not as an error; the error is a run that failed.
func TryCoalescing(ctx context.Context, s *client.Session, cfg Config) (*result.CoalescingTry, error) {
	try := &result.CoalescingTry{End: result.EndAgent, Block: result.Seconds(CoalescingBlock), Verdict: result.CoalescingNotTried, Restored: true}
	if !s.Limits.AllowTry {
		try.Why = probe.TryNotAllowed("--try-coalescing")
		return try, nil
	}
	block := cfg
	block.Duration, block.Count, block.Interval, block.Trip = CoalescingBlock, 0, CoalescingBlock, nil
	warm := block
	warm.Duration, warm.Interval = coalescingWarmup, coalescingWarmup
	if _, _, err := run(ctx, s, warm, false, func(result.Interval) {}); err != nil {
		return try, err
	}
	for pair := 0; pair < MaxCoalescingPairs; pair++ {
		// Every other pair runs at the least first: a path or host that
		// drifts steadily moves both orders' differences alike, and the
		// mean cancels it.
		order := []bool{false, true}
		if pair%2 == 1 {
			order = []bool{true, false}
		}
		for _, least := range order {
			res, done, err := run(ctx, s, block, least, func(result.Interval) {})
			if least && done != nil && done.Coalescing != nil {
				if cerr := done.Coalescing.Check(); cerr != nil {
					return try, fmt.Errorf("rr: the agent's account of its coalescing: %w", cerr)
				}
				ch := done.Coalescing
				try.Interface, try.Before, try.Set = ch.Interface, ch.Before, ch.Set
				switch {
				case !ch.Restored:
					try.Restored = false
					try.Verdict, try.Why = result.CoalescingUnjudged, "the agent could not put its coalescing back: "+ch.Error
					return try, nil
				case ch.Error != "":
					try.Verdict, try.Why = result.CoalescingUnjudged, ch.Error
					return try, nil
				}
			}
			var refused *client.Refusal
			switch {
			case err != nil && least && len(try.Blocks) < 2 && errors.As(err, &refused):
				try.Why = "the agent refused it: " + refused.Message
				return try, nil
			case err != nil:
				return try, err
			case least && (done == nil || done.Coalescing == nil):
				try.Why = "the agent did not say what it changed (an agent from before --try-coalescing runs the test as it is)"
				return try, nil
			case least && len(try.Set) == 0:
				try.Verdict, try.Why = result.CoalescingLeast, ""
				return try, nil
			case ctx.Err() != nil:
				try.Verdict, try.Why = result.CoalescingUnjudged, "the run was stopped before the pairs decided"
				return try, nil
			case res.RoundTrips == 0:
				try.Verdict, try.Why = result.CoalescingUnjudged, "a block made no round trips"
				return try, nil
			}
			try.Blocks = append(try.Blocks, result.CoalescingBlock{Least: least, RoundTrips: res.RoundTrips, P50: res.P50})
		}
		if pair+1 >= MinCoalescingPairs && judgeCoalescing(try, pair+1 == MaxCoalescingPairs) {
			return try, nil
		}
	}
	return try, nil
}

// judgeCoalescing sets try's figures from its blocks (in pairs, one as is
// and one at the least, in either order) and its verdict; it says whether
// the pairs decided. A cost is decided once its margin is within
// costMargin of it, or at the last pair: its figure is then what a report
// would gain, within the 15% narrows promises where the pairs allow.
func judgeCoalescing(try *result.CoalescingTry, last bool) bool {
	var asis, least float64
	var diffs []float64
	for i := 0; i+1 < len(try.Blocks); i += 2 {
		a, l := try.Blocks[i].P50.D().Seconds(), try.Blocks[i+1].P50.D().Seconds()
		if try.Blocks[i].Least {
			a, l = l, a
		}
		asis, least = asis+a, least+l
		diffs = append(diffs, a-l)
	}
	n := float64(len(diffs))
	if n == 0 {
		try.Verdict = result.CoalescingUnjudged
		return false
	}
	try.AsIs, try.Least = result.Seconds(time.Duration(asis/n*1e9)), result.Seconds(time.Duration(least/n*1e9))
	mean, half := metric.MeanCI(diffs)
	try.Gain, try.Margin = result.Seconds(time.Duration(mean*1e9)), result.Seconds(time.Duration(min(half, 1)*1e9))
	floor := max(coalescingFloorAbs.Seconds(), coalescingFloorRel*least/n)
	switch {
	case mean-half > 0 && mean > floor && (half <= costMargin*mean || last):
		try.Verdict = result.CoalescingCosts
	case mean+half < floor && mean-half > -floor:
		try.Verdict = result.CoalescingFree
	default:
		try.Verdict, try.Why = result.CoalescingUnjudged, fmt.Sprintf("%d pairs of blocks did not tell a difference from noise (%s ± %s)",
			len(diffs), metric.FormatDuration(time.Duration(mean*1e9)), metric.FormatDuration(time.Duration(half*1e9)))
		return false
	}
	try.Why = ""
	return true
}
