// Package fleet runs one test on many agents at once, started together,
// as VMFleet runs DiskSpd in every VM of a cluster (Disk), or as a
// primary ships its log to every replica (Net): what each host gets
// while all of them work, and the fleet's sum. The client's memory is
// bounded by the number of hosts: each host's account is kept, not its
// intervals.
package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/metric"
	probedisk "github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// Target is one host of the fleet: its session, or why there is none,
// and the directory its disk test runs in.
type Target struct {
	Name  string
	Sess  *client.Session
	Error string
	Dir   string
}

// Config is the fleet's disk test: the same patterns on every host.
type Config struct {
	Disk probedisk.Config // Dir is each Target's
	// Probes are the clock probes each host is sent (default 8).
	Probes int
	// Margin is from the last host ready to the instant they all begin
	// (default 4 × the longest clock round trip, at least 50 ms): time
	// enough for every Go to arrive before it.
	Margin time.Duration
	// Sweep, when set, is the queue depths Disk.Patterns step through
	// (Swept made them), read back as curves; SLO the objective each
	// step is held to for the knee.
	Sweep []int
	SLO   *result.FleetSLO
}

// Swept is ps's shapes (each pattern less its queue depth, in order, once
// each) at every depth, shape by shape, the depths ascending: what a
// sweep runs. A log writer waits for each flush, so a shape with
// fdatasync has no depth to step; and the patterns must fit one test.
func Swept(ps []probedisk.Pattern, depths []int) ([]probedisk.Pattern, error) {
	var shapes []probedisk.Pattern
	seen := map[string]bool{}
	for _, p := range ps {
		if p.Sync == result.SyncFdatasync {
			return nil, fmt.Errorf("%s waits for each flush before the next write: no queue depth to sweep (sweep the data or backup profile, or a custom pattern without --sync fdatasync)", p.Shape())
		}
		if !seen[p.Shape()] {
			seen[p.Shape()] = true
			shapes = append(shapes, p)
		}
	}
	if n := len(shapes) * len(depths); n > wire.MaxDiskPatterns {
		return nil, fmt.Errorf("%d shapes at %d depths are %d steps: a sweep runs at most %d (fewer depths, or one shape with --profile custom)",
			len(shapes), len(depths), n, wire.MaxDiskPatterns)
	}
	var out []probedisk.Pattern
	for _, p := range shapes {
		for _, qd := range depths {
			p.QD = qd
			out = append(out, p)
		}
	}
	return out, nil
}

// Disk runs cfg's disk test on every target that has a session, each held
// once prepared until all are, then begun at one instant in each host's
// own clock. A host that fails is reported and does not stop the others.
func Disk(ctx context.Context, targets []Target, cfg Config) *result.Fleet {
	res := &result.Fleet{Config: result.FleetConfig{Hosts: len(targets), Path: cfg.Disk.Dir,
		Disk: result.DiskConfig{Profiles: cfg.Disk.Profiles, Duration: result.Seconds(cfg.Disk.Duration), Interval: result.Seconds(cfg.Disk.Interval),
			FileBytes: cfg.Disk.Size, Buffered: cfg.Disk.Buffered, Engine: cfg.Disk.Engine, Seed: cfg.Disk.Seed}}}
	for _, p := range cfg.Disk.Patterns {
		res.Config.Patterns = append(res.Config.Patterns, p.Name())
	}
	res.Hosts = make([]result.FleetHost, len(targets))
	offsets := make([]time.Duration, len(targets))
	var longest time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	live := 0
	for i, t := range targets {
		h := &res.Hosts[i]
		h.Name, h.Error = t.Name, t.Error
		if t.Sess == nil {
			continue
		}
		h.Addr = t.Sess.Addr()
		live++
		wg.Add(1)
		go func() {
			defer wg.Done()
			off, rtt, err := t.Sess.ClockOffset(max(cfg.Probes, 8))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				h.Error = "its clock: " + err.Error()
				return
			}
			offsets[i], h.ClockOffset, h.ClockRTT = off, result.Seconds(off), result.Seconds(rtt)
			longest = max(longest, rtt)
		}()
	}
	wg.Wait()
	margin := cfg.Margin
	if margin <= 0 {
		margin = max(50*time.Millisecond, 4*longest)
	}
	b := newBarrier(live, margin, 0)
	dones := make([]*wire.Done, len(targets))
	for i, t := range targets {
		h := &res.Hosts[i]
		if t.Sess == nil {
			continue
		}
		if h.Error != "" {
			b.leave()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := cfg.Disk
			d.Dir, d.Histograms = t.Dir, true
			spec := probedisk.Spec(d)
			spec.Hold = true
			arrived := false
			done, err := t.Sess.RunHeld(ctx, spec, func(*wire.Accepted) error { return nil }, func(result.Interval) {},
				func() (int64, error) {
					arrived = true
					at, _ := b.arrive() // no patience: every host is waited for
					return at.Add(offsets[i]).UnixNano(), nil
				})
			if !arrived {
				b.leave()
			}
			mu.Lock()
			defer mu.Unlock()
			dones[i] = done
			if err != nil {
				h.Error = err.Error()
			}
		}()
	}
	wg.Wait()
	instant := b.instant()
	var after []float64
	for i := range targets {
		h, d := &res.Hosts[i], dones[i]
		if d == nil {
			continue
		}
		h.Disk = d.Disk
		if d.Started > 0 && !instant.IsZero() {
			a := result.Seconds(time.Duration(d.Started - offsets[i].Nanoseconds() - instant.UnixNano()))
			h.StartedAfter = &a
			after = append(after, float64(a))
		}
	}
	res.Start = startOf(after)
	res.Patterns = patterns(res)
	if len(cfg.Sweep) > 0 {
		res.Sweep = sweep(cfg.Disk.Patterns, cfg.Sweep, cfg.SLO, res.Patterns)
	}
	return res
}

// sweep reads the fleet's patterns (ran, as Swept made them) as curves,
// and finds each one's knee: the step with the most IOPS whose merged
// latency held slo.
func sweep(ran []probedisk.Pattern, depths []int, slo *result.FleetSLO, fps []result.FleetPattern) *result.FleetSweep {
	sw := &result.FleetSweep{Depths: depths, SLO: slo}
	for i, p := range ran {
		if n := len(sw.Curves); n == 0 || sw.Curves[n-1].Shape != p.Shape() {
			sw.Curves = append(sw.Curves, result.FleetCurve{Shape: p.Shape()})
		}
		c := &sw.Curves[len(sw.Curves)-1]
		fp := fps[i]
		pt := result.FleetPoint{QD: p.QD, Pattern: i, Hosts: fp.Hosts, IOPS: fp.IOPS}
		if slo != nil && fp.Latency != nil && fp.Hosts > 0 {
			v := fp.Latency.Quantile(slo.Quantile)
			held := v <= slo.Bound
			pt.Latency, pt.Held = &v, &held
			if held && (c.Knee == nil || fp.IOPS > c.Points[*c.Knee].IOPS) {
				k := len(c.Points)
				c.Knee = &k
			}
		}
		c.Points = append(c.Points, pt)
	}
	return sw
}

// startOf is the start's spread over the hosts that began, each after
// the fleet's instant (seconds); nil when none did.
func startOf(after []float64) *result.FleetStart {
	if len(after) == 0 {
		return nil
	}
	lo, hi := after[0], after[0]
	for _, a := range after {
		lo, hi = min(lo, a), max(hi, a)
	}
	return &result.FleetStart{Hosts: len(after), MedianAfter: result.Seconds(metric.Median(after)), MaxAfter: result.Seconds(hi), Skew: result.Seconds(hi - lo)}
}

// patterns sums each pattern over the hosts that ran it to its end.
func patterns(res *result.Fleet) []result.FleetPattern {
	out := make([]result.FleetPattern, len(res.Config.Patterns))
	for i, name := range res.Config.Patterns {
		fp := &out[i]
		fp.Name = name
		var iops, p99 []float64
		var gib float64
		merged := metric.NewHistogram()
		shift := 0
		for _, h := range res.Hosts {
			if h.Disk == nil || i >= len(h.Disk.Patterns) {
				continue
			}
			p := h.Disk.Patterns[i]
			if p.Stopped != "" || p.IOs == 0 {
				continue
			}
			fp.Hosts++
			fp.IOPS += p.IOPS
			fp.Throughput += p.Throughput
			iops = append(iops, p.IOPS)
			p99 = append(p99, float64(p.P99))
			gib += float64(h.Disk.FileBytes) / (1 << 30)
			if p.Histogram == nil {
				fp.HistogramsMissing = append(fp.HistogramsMissing, h.Name+": sent none")
				continue
			}
			hist, err := metric.FromSparse(*p.Histogram)
			if err != nil {
				fp.HistogramsMissing = append(fp.HistogramsMissing, h.Name+": "+err.Error())
				continue
			}
			merged.Merge(hist)
			shift = max(shift, p.Histogram.Shift)
		}
		if merged.Count() > 0 {
			l := result.LatenciesOf(merged)
			fp.Latency, fp.Precision = &l, metric.Precision(shift)
		}
		fp.MedianIOPS = metric.Median(iops)
		fp.MedianP99 = result.Seconds(metric.Median(p99))
		if gib > 0 {
			fp.IOPSPerGiB = fp.IOPS / gib
		}
	}
	return out
}

// barrier holds the hosts until every live one has prepared or gone,
// then gives them all one instant, margin after the last. With patience,
// it waits no longer than that after the first arrived: the hosts not
// there by then are late, and begin without the others (a fleet's
// streams, whose agents wait for their start only so long).
type barrier struct {
	mu       sync.Mutex
	waiting  int // live hosts not yet arrived nor gone
	margin   time.Duration
	patience time.Duration // 0: wait for every host
	timer    *time.Timer
	at       time.Time
	ready    chan struct{}
	released bool
}

func newBarrier(live int, margin, patience time.Duration) *barrier {
	b := &barrier{waiting: live, margin: margin, patience: patience, ready: make(chan struct{})}
	if live == 0 {
		b.releaseLocked()
	}
	return b
}

// arrive waits for the rest and returns the instant, or false for a host
// that arrived after the others were released (too late). Every host
// that does not arrive leaves (its test ended, by error or ctx), so the
// wait ends.
func (b *barrier) arrive() (time.Time, bool) {
	b.mu.Lock()
	if b.released {
		b.mu.Unlock()
		return time.Time{}, false
	}
	b.waiting--
	switch {
	case b.waiting == 0:
		b.releaseLocked()
	case b.patience > 0 && b.timer == nil:
		b.timer = time.AfterFunc(b.patience, b.release)
	}
	b.mu.Unlock()
	<-b.ready
	return b.at, true
}

// leave is a host that will not arrive.
func (b *barrier) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting--
	if b.waiting == 0 && !b.released {
		b.releaseLocked()
	}
}

func (b *barrier) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.released {
		b.releaseLocked()
	}
}

// releaseLocked sets the instant and lets the hosts that arrived go.
func (b *barrier) releaseLocked() {
	b.released = true
	b.at = time.Now().Add(b.margin)
	if b.timer != nil {
		b.timer.Stop()
	}
	close(b.ready)
}

func (b *barrier) instant() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.at
}
