// Package watch is `narrows watch`'s probe: one link to one agent, watched
// for as long as the command runs, at little cost to the link. It keeps one
// session for paced round trips (net rr's probe, back-to-back tests within
// the agent's --max-duration, re-dialled with backoff when the agent or the
// link goes away), and runs periodic steps (a short stream, and whatever
// plugs in beside it: Step) on sessions of their own while the round trips
// go on. Round trips made while a step loads the link are "loaded".
//
// It measures and folds: fixed histograms and counters, so its memory does
// not grow over days. It never prints; the interval records it emits are
// all an output (table, JSON lines, Prometheus) needs.
package watch

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// Config is what to watch, and how.
type Config struct {
	Client            client.Options
	Rate              float64 // round trips per second
	Request, Response int64
	// Interval is how often Run emits a record; 0: never, the caller asks
	// for them (Watcher.Interval), as fleet watch does for all its links
	// from one ticker.
	Interval time.Duration
	Duration time.Duration // 0: until ctx is done
	// Delay is the wait before the first dial of a watch begun without a
	// session (not counted as time out of reach): fleet watch spreads its
	// links' round trips over the pace's gap rather than sending them all
	// in the same millisecond.
	Delay time.Duration
	// Steps run periodically beside the round trips (StreamStep; a path-MTU
	// or self-probe step plugs in as one more entry).
	Steps []Step
	// testLength bounds one round-trip test when the agent sets no limit.
	testLength time.Duration
}

// Step is a measurement made every Every, on a session of its own (the
// agent runs several tests at once), while the round trips go on. Its
// Name is the error kind its failures count under (a fixed set: see
// result.WatchErrorKinds). A step is skipped while the link is down.
type Step struct {
	Name  string
	Every time.Duration
	// First is the wait before the first run (default: one second of
	// round trips, so the first figures come early rather than after Every).
	First time.Duration
	Run   func(ctx context.Context, w *Watcher) error
}

// Backoff between attempts to reach a vanished agent: doubling from
// minBackoff to maxBackoff, back to minBackoff once round trips flow.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// Watcher holds what a watch has seen. Its methods are safe for concurrent
// use; a Step uses Dial, Load, StreamDone and SetPathMTU.
type Watcher struct {
	cfg   Config
	start time.Time

	mu        sync.Mutex
	up        bool
	downSince time.Time // when up went false; zero while up
	down      time.Duration
	windows   []*metric.Histogram // open Loads: each gets the loaded round trips
	cur       *metric.Histogram   // this interval's round trips
	curLoaded int64
	all       [2]*metric.Histogram // since the start, idle and loaded (the summary's)
	buckets   [2][]uint64          // per bucket, not cumulative; the last one is above every bound
	sum       [2]time.Duration
	total     int64
	errors    map[string]int64
	sessions  int64
	streams   map[string]result.WatchStream
	runs      int64
	mtuHere   int
	mtuAgent  int
	pathMTU   int
	lastErr   string // the last failure's, for a person (never a label)
	lastEmit  time.Time
}

func newWatcher(cfg Config, now time.Time) *Watcher {
	// Up from the start: Run begins on a session the caller has dialled
	// (or down, until its first session, when it has none).
	w := &Watcher{cfg: cfg, start: now, lastEmit: now, up: true, cur: metric.NewHistogram(),
		errors: map[string]int64{}, streams: map[string]result.WatchStream{}}
	for i := range w.all {
		w.all[i] = metric.NewHistogram()
		w.buckets[i] = make([]uint64, len(result.WatchBuckets)+1)
	}
	for _, k := range result.WatchErrorKinds {
		w.errors[k] = 0
	}
	return w
}

// Run watches until ctx is done or cfg.Duration has passed, starting on
// first (a session the caller dialled, so that a wrong secret or an absent
// agent is the caller's to report before the watch begins). A nil first
// starts the watch down, dialling with backoff: one link of a fleet,
// whose agent may be away when the watch starts. Once begun, nothing the
// agent or the link does ends the watch: failures are counted and the
// agent is dialled again. The summary comes back at the end.
func Run(ctx context.Context, first *client.Session, cfg Config, emit probe.Emit) *result.Watch {
	return New(cfg).Run(ctx, first, emit)
}

// New is a watch not begun: down, until Run's session or first dial.
func New(cfg Config) *Watcher {
	if cfg.testLength == 0 {
		cfg.testLength = 10 * time.Minute
	}
	w := newWatcher(cfg, time.Now())
	w.up, w.downSince = false, w.start
	return w
}

// Run is Run on a Watcher from New, once.
func (w *Watcher) Run(ctx context.Context, first *client.Session, emit probe.Emit) *result.Watch {
	cfg := w.cfg
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	if first != nil {
		// Nothing happened before the session the caller dialled.
		w.mu.Lock()
		w.up, w.down, w.downSince = true, 0, time.Time{}
		w.mu.Unlock()
		w.connected(first)
	} else if cfg.Delay > 0 {
		if !sleep(ctx, cfg.Delay) {
			return w.summary(time.Now())
		}
		w.mu.Lock()
		if !w.up {
			w.downSince = time.Now()
		}
		w.mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, st := range cfg.Steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.every(ctx, st)
		}()
	}
	if cfg.Interval > 0 {
		wg.Add(1)
		go w.tick(ctx, &wg, emit)
	}
	w.roundTrips(ctx, first)
	wg.Wait()
	if now := time.Now(); cfg.Interval > 0 && now.Sub(w.lastEmit) >= minInterval {
		emit(w.Interval(now)) // the stretch since the last record
	}
	return w.summary(time.Now())
}

// tick emits a record every Interval until ctx is done.
func (w *Watcher) tick(ctx context.Context, wg *sync.WaitGroup, emit probe.Emit) {
	defer wg.Done()
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			emit(w.Interval(now))
		}
	}
}

// minInterval is the shortest last record worth emitting at the end.
const minInterval = 10 * time.Millisecond

// roundTrips runs paced rr tests back to back on one session, each as long
// as the agent allows, and dials again when one fails.
func (w *Watcher) roundTrips(ctx context.Context, sess *client.Session) {
	defer func() {
		if sess != nil {
			sess.Close()
		}
	}()
	backoff := minBackoff
	for ctx.Err() == nil {
		if sess == nil {
			s, err := client.Dial(ctx, w.cfg.Client)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				w.failed(result.WatchErrConnect, err)
				sleep(ctx, backoff)
				backoff = min(2*backoff, maxBackoff)
				continue
			}
			sess = s
			w.connected(sess)
		}
		d := w.cfg.testLength
		if most := sess.Limits.MaxDuration; most > 0 && most < d {
			d = most
		}
		before := w.trips()
		_, err := rr.Run(ctx, sess, rr.Config{Request: w.cfg.Request, Response: w.cfg.Response, Duration: d, Interval: d,
			Rate: w.cfg.Rate, Queries: 1, Trip: w.trip}, func(result.Interval) {})
		if w.trips() > before {
			backoff = minBackoff
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.failed(result.WatchErrRR, err)
			sess.Close()
			sess = nil
			sleep(ctx, backoff)
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

// every runs st every st.Every until ctx is done.
func (w *Watcher) every(ctx context.Context, st Step) {
	wait := st.First
	if wait <= 0 {
		wait = min(st.Every, time.Second)
	}
	for sleep(ctx, wait) {
		began := time.Now()
		if w.isUp() {
			if err := st.Run(ctx, w); err != nil && ctx.Err() == nil {
				w.failed(st.Name, err)
			}
		}
		wait = time.Until(began.Add(st.Every))
	}
}

// sleep waits d, or less when ctx is done; it says whether ctx is not.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Dial opens a session of its own for a step.
func (w *Watcher) Dial(ctx context.Context) (*client.Session, error) {
	return client.Dial(ctx, w.cfg.Client)
}

// Load runs f as load on the link: the round trips made meanwhile count
// as loaded, and come back in a histogram of their own (the responsiveness
// draft's round trips on a separate connection).
func (w *Watcher) Load(f func()) *metric.Histogram {
	h := metric.NewHistogram()
	w.mu.Lock()
	w.windows = append(w.windows, h)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, x := range w.windows {
			if x == h {
				w.windows = append(w.windows[:i], w.windows[i+1:]...)
				break
			}
		}
	}()
	f()
	return h
}

// StreamDone records a short stream's figures.
func (w *Watcher) StreamDone(s result.WatchStream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.streams[s.Direction] = s
	w.runs++
}

// SetPathMTU records the path MTU a step measured (bytes; the metric
// appears once it is set).
func (w *Watcher) SetPathMTU(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pathMTU = n
}

func (w *Watcher) trip(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.markUp(time.Now())
	l := 0
	if len(w.windows) > 0 {
		l = 1
		w.curLoaded++
		for _, h := range w.windows {
			h.Record(d)
		}
	}
	// The first bound d is at or below (the last, +Inf, past them all).
	i, _ := slices.BinarySearch(result.WatchBuckets, d)
	w.buckets[l][i]++
	w.sum[l] += d
	w.all[l].Record(d)
	w.cur.Record(d)
	w.total++
}

func (w *Watcher) trips() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

func (w *Watcher) isUp() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.up
}

func (w *Watcher) markUp(now time.Time) {
	if !w.up {
		w.down += now.Sub(w.downSince)
		w.up, w.downSince = true, time.Time{}
	}
}

// connected notes a new session: up, and both ends' interface MTUs (the
// interfaces routing between them, from the facts each host tells).
func (w *Watcher) connected(s *client.Session) {
	here := 0
	if f := sysinfo.ReadFacts(s.PeerIP()); f != nil && len(f.Interfaces) == 1 {
		here = f.Interfaces[0].MTU
	}
	agent := 0
	if s.Facts != nil && len(s.Facts.Interfaces) == 1 {
		agent = s.Facts.Interfaces[0].MTU
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sessions++
	w.markUp(time.Now())
	w.mtuHere, w.mtuAgent = here, agent
}

// failed counts an error of kind; the link is down until round trips
// flow again, unless only a step failed.
func (w *Watcher) failed(kind string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errors[kind]++
	if err != nil {
		w.lastErr = kind + ": " + err.Error()
	}
	if kind != result.WatchErrConnect && kind != result.WatchErrRR {
		return
	}
	if w.up {
		w.up, w.downSince = false, time.Now()
	}
}

func (w *Watcher) cumulative(l int) result.WatchRTT {
	r := result.WatchRTT{Sum: result.Seconds(w.sum[l]), Buckets: make([]uint64, len(result.WatchBuckets))}
	var n uint64
	for i, c := range w.buckets[l] {
		n += c
		if i < len(r.Buckets) {
			r.Buckets[i] = n
		}
	}
	r.Count = n
	return r
}

func (w *Watcher) downSoFar(now time.Time) time.Duration {
	if w.up {
		return w.down
	}
	return w.down + now.Sub(w.downSince)
}

func (w *Watcher) lastStreams() []result.WatchStream {
	var out []result.WatchStream
	for _, d := range result.Directions {
		if s, ok := w.streams[d]; ok {
			out = append(out, s)
		}
	}
	return out
}

// Interval is the record of the stretch since the last one (Run emits
// them itself every Config.Interval, when set).
func (w *Watcher) Interval(now time.Time) result.Interval {
	w.mu.Lock()
	defer w.mu.Unlock()
	iv := result.NewInterval(result.ProbeWatch, w.lastEmit.Sub(w.start), now.Sub(w.start))
	wi := &result.WatchInterval{Up: w.up, RoundTrips: int64(w.cur.Count()), LoadedTrips: w.curLoaded,
		RTT: result.LatencyOf(w.cur), TotalRoundTrips: w.total, Errors: map[string]int64{}, Sessions: w.sessions,
		DownSeconds: result.Seconds(w.downSoFar(now)), Idle: w.cumulative(0), Loaded: w.cumulative(1),
		Streams: w.lastStreams(), MTUHere: w.mtuHere, MTUAgent: w.mtuAgent, PathMTU: w.pathMTU, LastError: w.lastErr}
	if el := now.Sub(w.lastEmit); el > 0 {
		wi.Rate = float64(wi.RoundTrips) / el.Seconds()
	}
	for k, v := range w.errors {
		wi.Errors[k] = v
	}
	iv.Watch = wi
	w.cur.Reset()
	w.curLoaded = 0
	w.lastEmit = now
	return iv
}

func (w *Watcher) summary(now time.Time) *result.Watch {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &result.Watch{Duration: result.Seconds(now.Sub(w.start)), RoundTrips: w.total, Errors: map[string]int64{},
		Sessions: w.sessions, Down: result.Seconds(w.downSoFar(now)), Idle: result.LatencyOf(w.all[0]),
		Loaded: result.LatencyOf(w.all[1]), LoadedN: int64(w.all[1].Count()), Streams: w.lastStreams(), StreamRuns: w.runs,
		LastError: w.lastErr}
	for k, v := range w.errors {
		s.Errors[k] = v
	}
	return s
}
