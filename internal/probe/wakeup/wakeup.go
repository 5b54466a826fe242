// Package wakeup is the CPU wake-up experiment of `narrows host`: what an
// idle CPU waking costs each round trip of a database session on this
// machine, measured by experiment, not read from settings.
//
// Two threads on two CPUs answer each other over a loopback TCP
// connection, one 64-byte message outstanding, each blocking in the kernel
// between messages as a database's client (libpq, the MySQL client) and
// its server process do. Each wait leaves a CPU idle; an idle CPU may
// sleep deeply (a C-state; on a virtual machine, a halted vCPU the
// hypervisor must run again), and waking it takes time that is added to
// the round trip. The blocks alternate between the CPUs as they are and
// the CPUs kept awake (a CPU latency request of 0 on Linux, as tuned's
// latency-performance holds; idle-priority spinning threads on Windows),
// in pairs whose order alternates too, until the difference is shown to
// be real and larger than a floor, or shown to be within it, or the
// budget is spent: never a finding from noise.
//
// Why not narrows' own round trips to the agent: a Go program's runtime
// keeps a CPU from sleeping for a while after it blocks, so its round
// trips hide most of the cost a C client and server pay. Measured on this
// project's 2-vCPU VMs (cpuidle haltpoll, guest halt polling off), as is
// against the request held, loopback: pgbench -c 1 SELECT 1 61 → 16 µs a
// transaction, a C echo client and server 59 → 12 µs, narrows net rr only
// 25 → 12.5 µs; this experiment's blocking threads 53 → 13.6 µs on raw
// calls of their own, 51.1 → 11.3 µs on netio's blocking connections.
//
// It prints nothing and touches nothing that outlives it: the request is
// withdrawn (the file closed), the spinning threads end, with the run.
package wakeup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// Config is the experiment's budget.
type Config struct {
	// Duration is the most it may take; it ends sooner once judged.
	Duration time.Duration
	// Block is how long each kind of block is measured (default 1 s; the
	// blocks as is twice that).
	Block time.Duration
	// Settle is how long the CPUs run as they are, after a block that
	// kept them awake, before a block as is measures (default 5 s).
	Settle time.Duration
	// MinPairs is the fewest pairs of blocks judged (default 4).
	MinPairs int
}

func (c Config) withDefaults() Config {
	if c.Block <= 0 {
		c.Block = time.Second
	}
	if c.Settle <= 0 {
		c.Settle = 5 * time.Second
	}
	if c.MinPairs <= 0 {
		c.MinPairs = 4
	}
	return c
}

// pairTime is one pair of blocks: as is (Settle, then two Blocks) and
// awake (awakeSettle, then a Block).
func (c Config) pairTime() time.Duration { return c.Settle + 3*c.Block + awakeSettle }

// MinDuration is the shortest Duration c holds to: its fewest pairs, and
// a second for starting the threads and taking the CPUs' hold, whole.
func (c Config) MinDuration() time.Duration {
	c = c.withDefaults()
	return (time.Duration(c.MinPairs)*c.pairTime() + time.Second).Truncate(time.Second)
}

// Floors of the verdict: a difference per round trip below both is too
// small to act on (2 µs is 10 ms over a 5,000-query report).
const (
	floorAbs = 2 * time.Microsecond
	floorRel = 0.10 // of the awake round trip
)

// ErrUnsupported: this OS has no way here to keep CPUs awake or to pin the
// two threads.
var ErrUnsupported = errors.New("not supported on this OS")

// blocker runs the experiment's blocks: round trips (tripBlocks: the
// pair's, a database's queries) or the operator's own job (jobs).
type blocker interface {
	// block runs one block, with the CPUs kept awake or as they are,
	// after settle.
	block(ctx context.Context, awake bool, settle, d time.Duration) (result.WakeupBlock, error)
	// pairTime is how long a pair of blocks takes.
	pairTime(cfg Config) time.Duration
	// fits says whether left more pairs fit the budget, before its
	// fewest pairs ran (nil), or, a *shortBudget, why not and what would.
	fits(cfg Config, left int) error
	// unit is what a block's mean is a time of ("a round trip"), and
	// while what other work was read.
	unit() (what, while string)
	close()
}

// tripBlocks times round trips in blocks of a fixed length.
type tripBlocks struct{ trips }

func (t tripBlocks) block(ctx context.Context, awake bool, settle, d time.Duration) (result.WakeupBlock, error) {
	return block(ctx, t.trips, awake, settle, d)
}

func (tripBlocks) pairTime(cfg Config) time.Duration { return cfg.pairTime() }

// fits: fixed blocks always do (Config.MinDuration is the least budget).
func (tripBlocks) fits(Config, int) error { return nil }

func (tripBlocks) unit() (string, string) { return "a round trip", "while the round trips ran" }

// trips are the round trips a block times: the pair's, or a database's
// queries (RunQueries).
type trips interface {
	// run makes round trips for d and says how many, in how long.
	run(ctx context.Context, d time.Duration) (int64, time.Duration, error)
	// partners are the other processes whose CPU time is the round
	// trips' own (a database server on this host), not other work.
	partners() []int
	close()
}

// Run runs the experiment on this machine, on its own pair of threads.
// The result is always returned, its verdict unjudged when it could not
// run (Cannot says why).
func Run(ctx context.Context, cfg Config) (*result.Wakeup, error) {
	return runOn(ctx, cfg, func(time.Time) (blocker, error) {
		p, err := newPair()
		if err != nil {
			return nil, err
		}
		return tripBlocks{p}, nil
	})
}

// QueriesHere says whether a database's queries can be timed on this OS
// (nil), or why not.
func QueriesHere() error { return queriesHere() }

// RunQueries runs the experiment on a database's queries, sent and read
// by one locked thread in the engine's own protocol (dbconn.RawQuery):
// each round trip is then the database's own, its server's wake-ups and
// work included. It closes q.
func RunQueries(ctx context.Context, cfg Config, q *dbconn.RawQuery) (*result.Wakeup, error) {
	if err := queriesHere(); err != nil {
		q.Close()
		return &result.Wakeup{Verdict: result.WakeupUnjudged, Cannot: err.Error()}, nil
	}
	opened := false
	res, err := runOn(ctx, cfg, func(time.Time) (blocker, error) {
		opened = true
		p, err := newQueries(q)
		if err != nil {
			return nil, err
		}
		return tripBlocks{p}, nil
	})
	if !opened {
		q.Close()
	}
	return res, err
}

// runOn runs the experiment on the blocks open makes (given the budget's
// end).
func runOn(ctx context.Context, cfg Config, open func(end time.Time) (blocker, error)) (*result.Wakeup, error) {
	cfg = cfg.withDefaults()
	res := &result.Wakeup{Verdict: result.WakeupUnjudged}
	how, err := canHold()
	if err != nil {
		res.Cannot = "the CPUs cannot be kept awake here: " + err.Error()
		return res, nil
	}
	res.How = how
	end := time.Now().Add(cfg.Duration)
	p, err := open(end)
	if err != nil {
		res.Cannot = err.Error()
		return res, nil
	}
	defer p.close()
	// Each pair: the CPUs as they are, then kept awake. Awake takes
	// effect at once; as is does not: after a block awake, this project's
	// VMs answered at the awake pace for 0.5-1 s more, then climbed, at
	// times by way of a plateau near 22 µs, to their own, 50-56 µs a
	// round trip, in 1.25-3 s (250 ms slices, ten cycles). With 3 s of
	// settling, one block as is in four still caught the plateau (21.6,
	// 26.4, 32.6 µs against 50-64), and the predicted gain read 0.81-0.93
	// of pgbench's. So a block as is measures only after Settle (5 s), and
	// for twice as long as one awake; one still caught (markSettling) is
	// not counted.
	for pairs := 0; ; pairs++ {
		if ctx.Err() != nil {
			res.Why = "interrupted before it was judged"
			return res, nil
		}
		// Past MinPairs the last pair was judged (below): another one
		// runs only while it fits the budget.
		if pairs >= cfg.MinPairs && time.Now().Add(p.pairTime(cfg)).After(end) {
			break
		}
		var err error
		if pairs > 0 && pairs < cfg.MinPairs {
			err = p.fits(cfg, cfg.MinPairs-pairs)
		}
		var asis, awake result.WakeupBlock
		if err == nil {
			asis, err = p.block(ctx, false, cfg.Settle, 2*cfg.Block)
		}
		if err == nil {
			awake, err = p.block(ctx, true, awakeSettle, cfg.Block)
		}
		// A job that does not fit the budget ends the run: unjudged,
		// saying what would fit, before its fewest pairs ran.
		if short := (*shortBudget)(nil); errors.As(err, &short) {
			if pairs >= cfg.MinPairs {
				break
			}
			res.Why = short.Error()
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("wakeup: %w", err)
		}
		res.Blocks = append(res.Blocks, asis, awake)
		if pairs+1 >= cfg.MinPairs && judge(res) {
			break
		}
	}
	what, while := p.unit()
	if b := busy(res.Blocks); res.Verdict == result.WakeupUnjudged && b > maxOthers {
		res.Why = fmt.Sprintf("other work took %.0f%% of this machine's CPU time %s (the median block as is; it is judged at %.0f%% or less): "+
			"a CPU that other work keeps busy does not idle between round trips, so what waking costs a session depends on that work, not on the machine; "+
			"run it again when the host is quiet, or time the database's own client (pgbench -c 1) as it is and with the CPUs kept awake",
			100*b, while, 100*maxOthers)
	} else if res.Verdict == result.WakeupUnjudged {
		res.Why = fmt.Sprintf("after %d pairs of blocks the difference, %s ± %s %s, is neither clearly above %s nor clearly below it: run it longer (--duration) on a quieter machine",
			len(res.Blocks)/2, metric.FormatDuration(2*res.PerWake.D()), metric.FormatDuration(2*res.PerWakeMargin.D()), what, metric.FormatDuration(floor(res)))
	}
	return res, nil
}

// awakeSettle is the round trips made, once the CPUs are kept awake,
// before a block awake measures.
const awakeSettle = 250 * time.Millisecond

// block runs one block, with the CPUs kept awake or as they are: round
// trips for settle, then for d, measured.
func block(ctx context.Context, p trips, awake bool, settle, d time.Duration) (result.WakeupBlock, error) {
	if awake {
		release, err := hold()
		if err != nil {
			return result.WakeupBlock{}, err
		}
		defer release()
	}
	if _, _, err := p.run(ctx, settle); err != nil {
		return result.WakeupBlock{}, err
	}
	others := sysinfo.OthersSince(p.partners()...)
	n, took, err := p.run(ctx, d)
	b := result.WakeupBlock{Awake: awake, RoundTrips: n}
	if share, ok := others(); ok {
		b.Others = &share
	}
	if n > 0 {
		b.Mean = result.Seconds(took / time.Duration(n))
	}
	return b, err
}

// judge sets res's figures from its blocks, in pairs as is then awake
// (the paired differences: seconds a round trip, as is less awake), and
// its verdict; it says whether it is judged. The pairs whose block as is
// was still settling, or whose block awake was disturbed (markSettling),
// are not counted.
func judge(res *result.Wakeup) bool {
	markSettling(res.Blocks)
	var asis, awake float64
	var diffs []float64
	for i := 0; i+1 < len(res.Blocks); i += 2 {
		if res.Blocks[i].Settling || res.Blocks[i+1].Disturbed {
			continue
		}
		a, w := res.Blocks[i].Mean.D().Seconds(), res.Blocks[i+1].Mean.D().Seconds()
		asis, awake = asis+a, awake+w
		diffs = append(diffs, a-w)
	}
	if n := float64(len(diffs)); n > 0 {
		res.AsIs, res.Awake = result.Seconds(time.Duration(asis/n*1e9)), result.Seconds(time.Duration(awake/n*1e9))
	}
	mean, half := metric.MeanCI(diffs)
	res.PerWake = result.Seconds(time.Duration(mean / 2 * 1e9))
	res.PerWakeMargin = result.Seconds(time.Duration(half / 2 * 1e9))
	f := floor(res).Seconds()
	switch {
	case busy(res.Blocks) > maxOthers:
		res.Verdict = result.WakeupUnjudged
		return false
	case len(diffs) < 2:
		res.Verdict = result.WakeupUnjudged
	case mean-half > 0 && mean > f:
		res.Verdict = result.WakeupCosts
	case mean+half < f && mean-half > -f:
		res.Verdict = result.WakeupFree
	default:
		res.Verdict = result.WakeupUnjudged
		return false
	}
	return res.Verdict != result.WakeupUnjudged
}

// maxOthers is the most of the machine's CPU time other work may take,
// in the median block as is, for the experiment to judge.
const maxOthers = 0.10

// busy is the median share of the machine's CPU time other work took in
// the blocks as is that read it (0: none did).
func busy(blocks []result.WakeupBlock) float64 {
	var o []float64
	for i := 0; i < len(blocks); i += 2 {
		if blocks[i].Others != nil {
			o = append(o, *blocks[i].Others)
		}
	}
	if len(o) == 0 {
		return 0
	}
	return metric.Median(o)
}

// settlingMADs is how far below the blocks as is's median a settling
// block lies, in their median absolute deviations: beyond their own
// scatter, not a noisy block near the floor.
const settlingMADs = 3

// markSettling marks the blocks as is that were still settling: nearer
// the median awake block's pace than the median block as is's (below
// the midpoint) and settlingMADs beyond the blocks as is's scatter,
// where the medians show a cost above the floor at all, and never half
// of the blocks as is or more (then the medians are not the machine's
// own). On this project's VMs 4 of 14 runs of
// `narrows host` had one such block after its 5 s of settling (21-26 µs
// a round trip against 49-51 µs as is and 11 µs awake: the hypervisor
// still answered at nearly the awake pace), which pulled the mean of
// the differences to 0.84-0.87 of what pgbench gained; the machine as
// is alone, 40 s of round trips in 250 ms slices, never ran that fast.
//
// The blocks awake are held the same way, the other way round: one that
// ran nearer the median block as is's pace than the awake one's, beyond
// the blocks awake's scatter, was disturbed (something else held the
// CPUs while they were kept awake: the agent's side of one run here read
// 84.4 µs awake among 11.3-13.6, as is 51-65, which pulled its figure to
// 17.3 µs a wake-up beside this host's 21.0) and is marked Disturbed.
func markSettling(blocks []result.WakeupBlock) {
	var asis, awake []float64
	for i := 0; i+1 < len(blocks); i += 2 {
		blocks[i].Settling, blocks[i+1].Disturbed = false, false
		asis = append(asis, blocks[i].Mean.D().Seconds())
		awake = append(awake, blocks[i+1].Mean.D().Seconds())
	}
	if len(asis) < 3 {
		return
	}
	ma, mw := metric.Median(asis), metric.Median(awake)
	if ma-mw <= floorAt(mw) {
		return
	}
	mid := (ma + mw) / 2
	// off are the blocks of one kind (xs, their median m) beyond mid, on
	// the other kind's side, and settlingMADs beyond their own scatter
	// (MAD); none where they are half of them or more.
	off := func(xs []float64, m float64, beyond func(x float64) bool) []int {
		dev := make([]float64, len(xs))
		for i, x := range xs {
			dev[i] = math.Abs(x - m)
		}
		spread := metric.Median(dev)
		var out []int
		for i, x := range xs {
			if beyond(x) && math.Abs(m-x) > settlingMADs*spread {
				out = append(out, i)
			}
		}
		if 2*len(out) >= len(xs) {
			return nil
		}
		return out
	}
	for _, i := range off(asis, ma, func(a float64) bool { return a < mid }) {
		blocks[2*i].Settling = true
	}
	for _, i := range off(awake, mw, func(w float64) bool { return w > mid }) {
		blocks[2*i+1].Disturbed = true
	}
}

func floor(res *result.Wakeup) time.Duration {
	return time.Duration(floorAt(res.Awake.D().Seconds()) * 1e9)
}

// floorAt is the floor, in seconds, beside an awake round trip of awake
// seconds: floorAbs, or floorRel of it where that is more.
func floorAt(awake float64) float64 { return max(floorAbs.Seconds(), floorRel*awake) }
