package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/prom"
	"github.com/narrows/narrows/internal/probe/watch"
	"github.com/narrows/narrows/internal/result"
)

// watchName is what --name may hold: it becomes a label value, so a safe
// charset and a bounded length.
var watchName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

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

func watchCmd(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "watch")
	var af agentFlags
	to := fs.String("to", "", "the agent: HOST or HOST:PORT (default port 7447)")
	af.register(fs)
	rate := fs.Float64("rate", 5, "round trips per second, paced (0.1 to 1000)")
	request := fs.String("request", "64B", "request size of each round trip")
	response := fs.String("response", "64B", "response size of each round trip")
	streamEvery := fs.String("stream-every", "5m", "how often to run a short stream, for throughput and responsiveness under load (0: never)")
	streamDuration := fs.String("stream-duration", "2s", "how long each short stream runs, in each direction")
	streamDir := fs.String("stream-direction", "both", "up (this host sends), down (the agent sends) or both, one after the other")
	mtuEvery := fs.String("mtu-every", "1h", "how often to check the path MTU each way, as narrows net mtu does (0: never)")
	interval := fs.String("interval", "10s", "how often to print a line (and update the Prometheus figures)")
	duration := fs.String("duration", "0", "stop after this long (default: until Ctrl-C)")
	asJSON := fs.Bool("json", false, "write JSON lines (a record per interval, then the summary) instead of a table")
	promListen := fs.String("prometheus-listen", "", "also serve the figures at http://ADDR/metrics for Prometheus, e.g. 127.0.0.1:9188")
	name := fs.String("name", "", "a name for this link, added to every metric as the label target (letters, digits, . _ -; at most 63)")
	if err := parse(fs, args); err != nil {
		return err
	}
	opts, err := af.to(env, *to)
	if err != nil {
		return err
	}
	cfg := watch.Config{Client: opts, Rate: *rate}
	if *rate < 0.1 || *rate > 1000 {
		return usagef("--rate %g: use 0.1 to 1000 round trips per second", *rate)
	}
	for _, v := range []struct {
		flag, val string
		n         *int64
	}{{"--request", *request, &cfg.Request}, {"--response", *response, &cfg.Response}} {
		if *v.n, err = metric.ParseSize(v.val); err != nil {
			return usagef("%s: %v", v.flag, err)
		}
		if *v.n < 1 || *v.n > 1<<20 {
			return usagef("%s %s: use 1 byte to 1M", v.flag, v.val)
		}
	}
	if cfg.Interval, err = intervalFlag(*interval); err != nil {
		return err
	}
	var until string
	if cfg.Duration, until, err = untilFlag(*duration); err != nil {
		return err
	}
	sc := watch.StreamConfig{}
	if *streamEvery != "0" {
		if sc.Every, err = positiveDuration("--stream-every", *streamEvery); err != nil {
			return err
		}
	}
	if sc.Duration, err = positiveDuration("--stream-duration", *streamDuration); err != nil {
		return err
	}
	if sc.Duration < 100*time.Millisecond {
		return usagef("--stream-duration %s: use at least 100ms", *streamDuration)
	}
	switch *streamDir {
	case "up":
		sc.Directions = []string{result.DirUp}
	case "down":
		sc.Directions = []string{result.DirDown}
	case "both":
		sc.Directions = []string{result.DirUp, result.DirDown}
	default:
		return usagef("--stream-direction %q: use up, down or both", *streamDir)
	}
	if busy := time.Duration(len(sc.Directions)) * sc.Duration; sc.Every > 0 && sc.Every < 2*busy {
		return usagef("--stream-every %s with --stream-duration %s (%s): the streams would fill half the time or more; use --stream-every %s or more",
			*streamEvery, *streamDuration, *streamDir, metric.FlagDuration(2*busy))
	}
	var mtuStep time.Duration
	if *mtuEvery != "0" {
		if mtuStep, err = positiveDuration("--mtu-every", *mtuEvery); err != nil {
			return err
		}
		if mtuStep < time.Minute {
			return usagef("--mtu-every %s: use at least 1m (or 0: never)", *mtuEvery)
		}
	}
	if *name != "" && !watchName.MatchString(*name) {
		return usagef("--name %q: use letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", *name)
	}

	sess, err := connect(ctx, opts)
	if err != nil {
		return err
	}
	lim := sess.Limits
	switch {
	case lim.MaxTestMemory > 0 && cfg.Request+cfg.Response > lim.MaxTestMemory:
		sess.Close()
		return usagef("--request %s and --response %s need more buffer memory than the agent at %s allows per test (its --max-test-memory, %s)",
			*request, *response, opts.Addr, metric.FormatBytes(lim.MaxTestMemory))
	case sc.Every > 0 && lim.MaxDuration > 0 && sc.Duration > lim.MaxDuration:
		sess.Close()
		return usagef("--stream-duration %s: the agent at %s allows tests of up to %s (its --max-duration)", *streamDuration, opts.Addr, metric.FlagDuration(lim.MaxDuration))
	case (sc.Every > 0 || mtuStep > 0) && lim.MaxTests > 0 && lim.MaxTests < 2:
		sess.Close()
		return usagef("the agent at %s runs one test at a time (its --max-tests 1): a watch's streams and path-MTU checks run beside its round trips; use --stream-every 0 --mtu-every 0, or raise --max-tests", opts.Addr)
	}
	if sc.Every > 0 {
		cfg.Steps = append(cfg.Steps, watch.StreamStep(sc))
	}
	if mtuStep > 0 {
		cfg.Steps = append(cfg.Steps, watch.MTUStep(mtuStep))
	}

	exp := prom.NewWatch(Version, *name)
	if *promListen != "" {
		at, stop, err := serveMetrics(*promListen, exp.Registry())
		if err != nil {
			sess.Close()
			return usagef("--prometheus-listen %s: %v", *promListen, err)
		}
		defer stop()
		if !*asJSON {
			fmt.Fprintf(env.Stdout, "serving Prometheus metrics at http://%s/metrics\n", at)
		}
	}
	out := output(env, *asJSON)
	rep := result.NewReport("watch", opts.Addr, tool(), env.Now())
	fromAgent(rep, sess)
	conf := result.WatchConfig{Name: *name, Rate: cfg.Rate, RequestBytes: cfg.Request, ResponseBytes: cfg.Response,
		Interval: result.Seconds(cfg.Interval), Duration: result.Seconds(cfg.Duration)}
	streams := "no streams"
	if sc.Every > 0 {
		conf.StreamEvery, conf.StreamDuration, conf.StreamDir = result.Seconds(sc.Every), result.Seconds(sc.Duration), *streamDir
		streams = fmt.Sprintf("a %s stream %s every %s", metric.FlagDuration(sc.Duration), strings.Join(sc.Directions, " then "), metric.FlagDuration(sc.Every))
	}
	rrCost, share := watchCost(cfg.Rate, cfg.Request, cfg.Response, sc.Every, sc.Duration)
	banner(env, *asJSON, "narrows watch → %s: %g round trips/s of %s / %s, %s, %s", opts.Addr, cfg.Rate,
		metric.FormatBytes(cfg.Request), metric.FormatBytes(cfg.Response), streams, until)
	cost := fmt.Sprintf("cost: round trips %s on the wire", metric.FormatBitRate(8*rrCost))
	if share > 0 {
		cost += fmt.Sprintf("; the streams fill each direction they run in %.2f%% of the time", 100*share)
	}
	banner(env, *asJSON, "%s", cost)
	exp.Update(&result.WatchInterval{Up: true, Sessions: 1, Errors: map[string]int64{}})
	emit := func(iv result.Interval) {
		exp.Update(iv.Watch)
		out.Interval(iv)
	}
	res := watch.Run(ctx, sess, cfg, emit)
	res.Config = conf
	rep.Watch = res
	if ctrlC(ctx) {
		// Ctrl-C is how a watch ends: the summary is whole, and the exit
		// code says all went well. Other signals still say what stopped it.
		ctx = context.WithoutCancel(ctx)
	}
	return finish(ctx, out, rep, nil)
}
