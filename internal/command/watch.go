package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/watch"
	"github.com/narrows/narrows/internal/result"
)

// Watch is `narrows watch`: a link watched until stopped (or for
// Watch.Duration): paced round trips, a short stream every Stream.Every,
// the path MTU every MTUEvery.
type Watch struct {
	Agent client.Options
	// Watch is the round trips; its Client and Steps are Run's to set.
	Watch watch.Config
	// Stream is the short streams (Every 0: none); StreamDir names their
	// directions as given (up, down or both), for the summary.
	Stream    watch.StreamConfig
	StreamDir string
	MTUEvery  time.Duration // 0: never
	Name      string        // the link's name, a label of every metric
	// Ready, when set, is called once the agent has accepted what the
	// watch will ask of it, before the banner: the command line starts its
	// Prometheus endpoint there, so that a refused watch serves nothing.
	Ready func() error
	// Polled, when set, gets each interval's figures before Env.Emit does
	// (the command line's Prometheus exporter), and once at the start with
	// the link up and no figures yet.
	Polled func(*result.WatchInterval)
	// Ended, when set, says whether the end of ctx is how this watch ends
	// (Ctrl-C on the command line): the summary is then whole and the run
	// went well. nil: every end of ctx is an interruption.
	Ended func(ctx context.Context) bool
}

// wireOverhead is what one TCP segment adds on an Ethernet link beyond its
// payload: Ethernet header and FCS 18, IPv4 20, TCP 20 with timestamps 12.
const wireOverhead = 70

// watchCost is what a watch costs the link on average: the round trips'
// bytes per second on the wire (a request and a response segment and the
// client's delayed ACK each time: at a few a second the next request
// comes too late to carry it), and the share of time a stream fills
// each direction it runs in.
func watchCost(rate float64, req, resp int64, every, dur time.Duration) (rrBytesPerSecond, streamShare float64) {
	rrBytesPerSecond = rate * float64(req+resp+3*wireOverhead)
	if every > 0 {
		streamShare = dur.Seconds() / every.Seconds()
	}
	return rrBytesPerSecond, streamShare
}

// Run watches until ctx ends or Watch.Duration has passed.
func (c Watch) Run(ctx context.Context, env Env) (*result.Report, error) {
	cfg, sc, addr := c.Watch, c.Stream, c.Agent.Addr
	cfg.Client = c.Agent
	sess, err := Connect(ctx, c.Agent)
	if err != nil {
		return nil, err
	}
	lim := sess.Limits
	switch {
	case lim.MaxTestMemory > 0 && cfg.Request+cfg.Response > lim.MaxTestMemory:
		sess.Close()
		return nil, errext.Userf(nil, "--request %s and --response %s need more buffer memory than the agent at %s allows per test (its --max-test-memory, %s)",
			metric.FormatBytes(cfg.Request), metric.FormatBytes(cfg.Response), addr, metric.FormatBytes(lim.MaxTestMemory))
	case sc.Every > 0 && lim.MaxDuration > 0 && sc.Duration > lim.MaxDuration:
		sess.Close()
		return nil, errext.Userf(nil, "--stream-duration %s: the agent at %s allows tests of up to %s (its --max-duration)", metric.FlagDuration(sc.Duration), addr, metric.FlagDuration(lim.MaxDuration))
	case (sc.Every > 0 || c.MTUEvery > 0) && lim.MaxTests > 0 && lim.MaxTests < 2:
		sess.Close()
		return nil, errext.Userf(nil, "the agent at %s runs one test at a time (its --max-tests 1): a watch's streams and path-MTU checks run beside its round trips; use --stream-every 0 --mtu-every 0, or raise --max-tests", addr)
	}
	cfg.Steps = nil
	if sc.Every > 0 {
		cfg.Steps = append(cfg.Steps, watch.StreamStep(sc))
	}
	if c.MTUEvery > 0 {
		cfg.Steps = append(cfg.Steps, watch.MTUStep(c.MTUEvery))
	}
	if c.Ready != nil {
		if err := c.Ready(); err != nil {
			sess.Close()
			return nil, err
		}
	}
	rep := env.agentReport("watch", addr, sess)
	conf := result.WatchConfig{Name: c.Name, Rate: cfg.Rate, RequestBytes: cfg.Request, ResponseBytes: cfg.Response,
		Interval: result.Seconds(cfg.Interval), Duration: result.Seconds(cfg.Duration)}
	streams := "no streams"
	if sc.Every > 0 {
		conf.StreamEvery, conf.StreamDuration, conf.StreamDir = result.Seconds(sc.Every), result.Seconds(sc.Duration), c.StreamDir
		streams = fmt.Sprintf("a %s stream %s every %s", metric.FlagDuration(sc.Duration), strings.Join(sc.Directions, " then "), metric.FlagDuration(sc.Every))
	}
	rrCost, share := watchCost(cfg.Rate, cfg.Request, cfg.Response, sc.Every, sc.Duration)
	until := Until(cfg.Duration)
	env.say(fmt.Sprintf("narrows watch → %s: %g round trips/s of %s / %s, %s, %s", addr, cfg.Rate,
		metric.FormatBytes(cfg.Request), metric.FormatBytes(cfg.Response), streams, until))
	cost := fmt.Sprintf("cost: round trips %s on the wire", metric.FormatBitRate(8*rrCost))
	if share > 0 {
		cost += fmt.Sprintf("; the streams fill each direction they run in %.2f%% of the time", 100*share)
	}
	env.say(cost)
	polled := c.Polled
	if polled == nil {
		polled = func(*result.WatchInterval) {}
	}
	polled(&result.WatchInterval{Up: true, Sessions: 1, Errors: map[string]int64{}})
	emit := env.emit()
	res := watch.Run(ctx, sess, cfg, func(iv result.Interval) {
		polled(iv.Watch)
		emit(iv)
	})
	res.Config = conf
	rep.Watch = res
	if c.Ended != nil && c.Ended(ctx) {
		// Ctrl-C is how a watch ends: the summary is whole, and the exit
		// code says all went well. Other signals still say what stopped it.
		ctx = context.WithoutCancel(ctx)
	}
	return Finish(ctx, env.Tool, rep, nil)
}
