package command

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/watch"
	"github.com/narrows/narrows/internal/result"
)

// MaxFleetWatch bounds the links of one fleet watch: each holds a
// session to its agent (two descriptors while a round trip test runs,
// more while a step does) and a few KiB of histograms.
const MaxFleetWatch = 10000

// WatchTarget is one link of a fleet watch: its name (a label value,
// checked by the command line) and its agent.
type WatchTarget struct {
	Name  string
	Agent client.Options
}

// FleetWatch is `narrows fleet watch`: many links watched by one process,
// each as `narrows watch` watches one (Watch, Stream and MTUEvery are
// every link's), the set reloaded while it runs.
type FleetWatch struct {
	Targets []WatchTarget
	Source  string // where the targets came from (@FILE, or the list), for the report
	// Watch is every link's round trips; its Interval is the fleet's
	// record's, its Duration the whole run's; Client, Steps and Delay are
	// Run's to set.
	Watch     watch.Config
	Stream    watch.StreamConfig
	StreamDir string
	MTUEvery  time.Duration
	// Reload delivers the targets read again (the command line reads the
	// file on SIGHUP): links new to them start, links gone from them stop,
	// links whose address changed start again; a set that could not be
	// read (Err) or is refused keeps the links. nil: the set never changes.
	Reload <-chan WatchReload
	// Ready, when set, is called once before the banner (the command
	// line's Prometheus endpoint).
	Ready func() error
	// Started, Polled and Stopped, when set, follow each link: it begins
	// (up 0, no figures yet), its record of each interval, it has stopped
	// (removed by a reload, or changed and about to start again). They are
	// called from one goroutine, in that order for a link.
	Started func(name string)
	Polled  func(name string, w *result.WatchInterval)
	Stopped func(name string)
	// Ended: as Watch's.
	Ended func(ctx context.Context) bool
}

// WatchReload is the targets read again, or why they could not be.
type WatchReload struct {
	Targets []WatchTarget
	Err     error
}

// stepSpread bounds how far apart the links' first steps are spread.
const stepSpread = time.Minute

// fleetLink is one link being watched.
type fleetLink struct {
	t      WatchTarget
	w      *watch.Watcher
	cancel context.CancelFunc
	done   chan struct{}
	sum    *result.Watch
}

// fleetWatch is a Run's state: the links, touched by Run's goroutine only.
type fleetWatch struct {
	c       FleetWatch
	start   time.Time
	last    time.Time
	links   map[string]*fleetLink
	streams chan struct{} // one stream at a time across the fleet
	mtus    chan struct{} // a few path-MTU checks at a time
}

// Run watches every link until ctx ends or Watch.Duration has passed. No
// link's failure ends it or stops another: a link whose agent is away,
// refuses or answers late is up 0 with its errors counted, and dialled
// again with backoff.
func (c FleetWatch) Run(ctx context.Context, env Env) (*result.Report, error) {
	if err := checkWatchTargets(c.Targets); err != nil {
		return nil, err
	}
	if c.Watch.Interval <= 0 || c.Watch.Rate <= 0 {
		return nil, errext.Userf(nil, "give a rate and an interval")
	}
	if c.Ready != nil {
		if err := c.Ready(); err != nil {
			return nil, err
		}
	}
	rep := result.NewReport("fleet watch", c.Source, env.Tool, env.now())
	n := len(c.Targets)
	cfg, sc := c.Watch, c.Stream
	streams := "no streams"
	if sc.Every > 0 {
		streams = fmt.Sprintf("a %s stream %s every %s (one link's at a time)", metric.FlagDuration(sc.Duration), strings.Join(sc.Directions, " then "), metric.FlagDuration(sc.Every))
	}
	mtu := "no path-MTU checks"
	if c.MTUEvery > 0 {
		mtu = "the path MTU every " + metric.FlagDuration(c.MTUEvery)
	}
	env.say(fmt.Sprintf("narrows fleet watch → %s from %s: each %g round trips/s of %s / %s, %s, %s, %s", metric.Plural(int64(n), "link"), c.Source,
		cfg.Rate, metric.FormatBytes(cfg.Request), metric.FormatBytes(cfg.Response), streams, mtu, Until(cfg.Duration)))
	rrCost, share := watchCost(cfg.Rate, cfg.Request, cfg.Response, sc.Every, sc.Duration)
	cost := fmt.Sprintf("cost: round trips %s on the wire per link, %s for the fleet", metric.FormatBitRate(8*rrCost), metric.FormatBitRate(8*rrCost*float64(n)))
	if share > 0 {
		cost += fmt.Sprintf("; each link's streams fill each direction they run in %.2f%% of the time", 100*share)
	}
	env.say(cost)

	runCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	now := time.Now()
	f := &fleetWatch{c: c, start: now, last: now, links: map[string]*fleetLink{},
		streams: make(chan struct{}, 1), mtus: make(chan struct{}, 4)}
	for i, t := range c.Targets {
		f.begin(runCtx, t, i, n)
	}
	emit := env.emit()
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	reloads, failures := int64(0), int64(0)
	for running := true; running; {
		select {
		case <-runCtx.Done():
			running = false
		case now := <-tick.C:
			emit(f.record(now))
		case r, ok := <-c.Reload:
			if !ok {
				c.Reload = nil // closed: no more reloads
				continue
			}
			err := r.Err
			if err == nil {
				err = checkWatchTargets(r.Targets)
			}
			if err != nil {
				failures++
				env.note(fmt.Sprintf("narrows: fleet watch: the targets were not reloaded, still watching the %s before: %v", metric.Plural(int64(len(f.links)), "link"), err))
				continue
			}
			reloads++
			env.note(f.reload(runCtx, r.Targets))
		}
	}
	if now := time.Now(); now.Sub(f.last) >= 10*time.Millisecond {
		emit(f.record(now)) // the stretch since the last record
	}
	f.end(slices.Collect(maps.Values(f.links)))
	res := &result.FleetWatch{Targets: c.Source, Duration: result.Seconds(time.Since(f.start)), Reloads: reloads, ReloadFailures: failures,
		Config: result.WatchConfig{Rate: cfg.Rate, RequestBytes: cfg.Request, ResponseBytes: cfg.Response,
			Interval: result.Seconds(cfg.Interval), Duration: result.Seconds(cfg.Duration)}}
	if sc.Every > 0 {
		res.Config.StreamEvery, res.Config.StreamDuration, res.Config.StreamDir = result.Seconds(sc.Every), result.Seconds(sc.Duration), c.StreamDir
	}
	for _, l := range f.sorted() {
		res.Links = append(res.Links, result.FleetWatchSummary{Name: l.t.Name, Addr: l.t.Agent.Addr, Watch: l.sum})
	}
	rep.FleetWatch = res
	if c.Ended != nil && c.Ended(ctx) {
		ctx = context.WithoutCancel(ctx)
	}
	return Finish(ctx, env.Tool, rep, nil)
}

// checkWatchTargets holds a set of targets to what a fleet watch takes:
// 1 to MaxFleetWatch links, each name once.
func checkWatchTargets(ts []WatchTarget) error {
	if len(ts) == 0 || len(ts) > MaxFleetWatch {
		return errext.Userf(nil, "%s: a fleet watch takes 1 to %d", metric.Plural(int64(len(ts)), "link"), MaxFleetWatch)
	}
	seen := make(map[string]bool, len(ts))
	for _, t := range ts {
		if seen[t.Name] {
			return errext.Userf(nil, "the link %s is named twice", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// begin starts watching t, the i-th of n links begun together: its first
// dial i/n of the pace's gap (at most a second) after the others', its
// steps' first runs spread likewise over a minute (or their period).
func (f *fleetWatch) begin(ctx context.Context, t WatchTarget, i, n int) {
	c := f.c
	cfg := c.Watch
	cfg.Client, cfg.Interval, cfg.Duration = t.Agent, 0, 0
	gap := min(time.Duration(float64(time.Second)/cfg.Rate), time.Second)
	cfg.Delay = gap * time.Duration(i) / time.Duration(n)
	cfg.Steps = nil
	spread := func(st watch.Step, sem chan struct{}) watch.Step {
		over := min(st.Every, stepSpread) - time.Second
		st.First = time.Second + max(over, 0)*time.Duration(i)/time.Duration(n)
		run := st.Run
		st.Run = func(ctx context.Context, w *watch.Watcher) error {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			defer func() { <-sem }()
			return run(ctx, w)
		}
		return st
	}
	if c.Stream.Every > 0 {
		cfg.Steps = append(cfg.Steps, spread(watch.StreamStep(c.Stream), f.streams))
	}
	if c.MTUEvery > 0 {
		cfg.Steps = append(cfg.Steps, spread(watch.MTUStep(c.MTUEvery), f.mtus))
	}
	lctx, cancel := context.WithCancel(ctx)
	l := &fleetLink{t: t, w: watch.New(cfg), cancel: cancel, done: make(chan struct{})}
	f.links[t.Name] = l
	if c.Started != nil {
		c.Started(t.Name)
	}
	go func() {
		defer close(l.done)
		l.sum = l.w.Run(lctx, nil, nil)
	}()
}

// end stops links and waits for them all (together: an agent that does
// not answer holds its link's end for seconds, not the others'), their
// summaries named.
func (f *fleetWatch) end(links []*fleetLink) {
	for _, l := range links {
		l.cancel()
	}
	for _, l := range links {
		<-l.done
		name := l.t.Name
		l.sum.Config = result.WatchConfig{Name: name, Rate: f.c.Watch.Rate, RequestBytes: f.c.Watch.Request, ResponseBytes: f.c.Watch.Response,
			Interval: result.Seconds(f.c.Watch.Interval)}
	}
}

// reload makes ts the links watched, and says what changed.
func (f *fleetWatch) reload(ctx context.Context, ts []WatchTarget) string {
	want := make(map[string]WatchTarget, len(ts))
	for _, t := range ts {
		want[t.Name] = t
	}
	var gone, changed []*fleetLink
	for name, l := range f.links {
		switch t, ok := want[name]; {
		case !ok:
			gone = append(gone, l)
		case t.Agent.Addr != l.t.Agent.Addr:
			changed = append(changed, l)
		}
	}
	stop := append(slices.Clone(gone), changed...)
	f.end(stop)
	for _, l := range stop {
		delete(f.links, l.t.Name)
		if f.c.Stopped != nil {
			f.c.Stopped(l.t.Name)
		}
	}
	var added []WatchTarget
	for _, t := range ts {
		if _, ok := f.links[t.Name]; !ok {
			added = append(added, t)
		}
	}
	for i, t := range added {
		f.begin(ctx, t, i, len(added))
	}
	names := func(ls []*fleetLink) string {
		var s []string
		for _, l := range ls {
			s = append(s, l.t.Name)
		}
		slices.Sort(s)
		return listed(s)
	}
	var newNames []string
	for _, t := range added {
		if !slices.ContainsFunc(changed, func(l *fleetLink) bool { return l.t.Name == t.Name }) {
			newNames = append(newNames, t.Name)
		}
	}
	slices.Sort(newNames)
	line := fmt.Sprintf("narrows: fleet watch: targets reloaded: %s now; %d added%s, %d removed%s, %d changed address%s",
		metric.Plural(int64(len(f.links)), "link"), len(newNames), listed(newNames), len(gone), names(gone), len(changed), names(changed))
	for _, l := range gone {
		line += fmt.Sprintf("; %s watched %s: %s round trips, p99 %s, out of reach %s", l.t.Name, l.sum.Duration.D().Truncate(time.Second),
			metric.FormatCount(l.sum.RoundTrips), metric.FormatDuration(l.sum.Idle.P99.D()), l.sum.Down.D().Truncate(time.Millisecond))
	}
	return line
}

// listed is " (a, b, c)" for a few names, with how many more beyond.
func listed(names []string) string {
	if len(names) == 0 {
		return ""
	}
	more := ""
	if len(names) > result.FleetWatchListed {
		more = fmt.Sprintf(" and %d more", len(names)-result.FleetWatchListed)
		names = names[:result.FleetWatchListed]
	}
	return " (" + strings.Join(names, ", ") + more + ")"
}

func (f *fleetWatch) sorted() []*fleetLink {
	out := slices.Collect(maps.Values(f.links))
	slices.SortFunc(out, func(a, b *fleetLink) int { return strings.Compare(a.t.Name, b.t.Name) })
	return out
}

// record is the fleet's record of the stretch since the last one: every
// link's record taken at the same instant (each goes to Polled), summed
// up, the down and the slowest few named.
func (f *fleetWatch) record(now time.Time) result.Interval {
	iv := result.NewInterval(result.ProbeFleetWatch, f.last.Sub(f.start), now.Sub(f.start))
	fw := &result.FleetWatchInterval{Links: len(f.links)}
	var down, slow []result.FleetWatchLink
	// Every link's record at the same instant first; then Polled, which
	// may wait (a scrape holds the exporter).
	recs := make(map[string]*result.WatchInterval, len(f.links))
	for name, l := range f.links {
		recs[name] = l.w.Interval(now).Watch
	}
	for name, r := range recs {
		if f.c.Polled != nil {
			f.c.Polled(name, r)
		}
		fw.RoundTrips += r.RoundTrips
		fl := result.FleetWatchLink{Name: name, RoundTrips: r.RoundTrips, DownSeconds: r.DownSeconds}
		if r.RoundTrips > 0 {
			fl.P50, fl.P99 = r.RTT.P50, r.RTT.P99
		}
		if r.Up {
			fw.Up++
			if r.RoundTrips > 0 {
				slow = append(slow, fl)
			}
			continue
		}
		fw.Down++
		fl.LastError = r.LastError
		down = append(down, fl)
	}
	slices.SortFunc(down, func(a, b result.FleetWatchLink) int {
		return cmp.Or(cmp.Compare(b.DownSeconds, a.DownSeconds), strings.Compare(a.Name, b.Name))
	})
	slices.SortFunc(slow, func(a, b result.FleetWatchLink) int {
		return cmp.Or(cmp.Compare(b.P99, a.P99), strings.Compare(a.Name, b.Name))
	})
	fw.DownLinks, fw.Slowest = down[:min(len(down), result.FleetWatchListed)], slow[:min(len(slow), result.FleetWatchListed)]
	if el := now.Sub(f.last); el > 0 {
		fw.Rate = float64(fw.RoundTrips) / el.Seconds()
	}
	iv.FleetWatch = fw
	f.last = now
	return iv
}
