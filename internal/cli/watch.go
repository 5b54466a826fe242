package cli

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/prom"
	"github.com/narrows/narrows/internal/probe/watch"
	"github.com/narrows/narrows/internal/result"
)

// watchName is what --name may hold: it becomes a label value, so a safe
// charset and a bounded length.
var watchName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

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

	if cfg.Duration, _, err = untilFlag(*duration); err != nil {
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
	stopMetrics := func() {}
	if *name != "" && !watchName.MatchString(*name) {
		return usagef("--name %q: use letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", *name)
	}

	exp := prom.NewWatch(Version, *name)
	out := output(env, *asJSON)
	c := command.Watch{Agent: opts, Watch: cfg, Stream: sc, StreamDir: *streamDir, MTUEvery: mtuStep, Name: *name,
		Polled: exp.Update, Ended: ctrlC}
	if *promListen != "" {
		c.Ready = func() error {
			at, stop, err := serveMetrics(*promListen, exp.Registry())
			if err != nil {
				return usagef("--prometheus-listen %s: %v", *promListen, err)
			}
			stopMetrics = stop
			if !*asJSON {
				fmt.Fprintf(env.Stdout, "serving Prometheus metrics at http://%s/metrics\n", at)
			}
			return nil
		}
	}
	defer func() { stopMetrics() }()
	rep, err := c.Run(ctx, coreEnv(env, out, *asJSON))
	if err == nil && ctrlC(ctx) {
		// The summary of a watch Ctrl-C ended is written as any other.
		ctx = context.WithoutCancel(ctx)
	}
	return written(ctx, out, rep, err)
}
