package cli

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/prom"
	"github.com/narrows/narrows/internal/probe/watch"
	"github.com/narrows/narrows/internal/result"
)

// watchName is what --name may hold: it becomes a label value, so a safe
// charset and a bounded length.
var watchName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// watchFlags are the flags of every watch, one link's or a fleet's.
type watchFlags struct {
	rate                                                                *float64
	request, response, streamEvery, streamDuration, streamDir, mtuEvery *string
	interval, duration, promListen                                      *string
	asJSON                                                              *bool
}

// register adds them to fs, with the rate and the stream period the
// command defaults to.
func (f *watchFlags) register(fs *flag.FlagSet, rate float64, streamEvery string) {
	f.rate = fs.Float64("rate", rate, "round trips per second, paced (0.1 to 1000)")
	f.request = fs.String("request", "64B", "request size of each round trip")
	f.response = fs.String("response", "64B", "response size of each round trip")
	f.streamEvery = fs.String("stream-every", streamEvery, "how often to run a short stream, for throughput and responsiveness under load (0: never)")
	f.streamDuration = fs.String("stream-duration", "2s", "how long each short stream runs, in each direction")
	f.streamDir = fs.String("stream-direction", "both", "up (this host sends), down (the agent sends) or both, one after the other")
	f.mtuEvery = fs.String("mtu-every", "1h", "how often to check the path MTU each way, as narrows net mtu does (0: never)")
	f.interval = fs.String("interval", "10s", "how often to print a line (and update the Prometheus figures)")
	f.duration = fs.String("duration", "0", "stop after this long (default: until Ctrl-C)")
	f.asJSON = fs.Bool("json", false, "write JSON lines (a record per interval, then the summary) instead of a table")
	f.promListen = fs.String("prometheus-listen", "", "also serve the figures at http://ADDR/metrics for Prometheus, e.g. 127.0.0.1:9188")
}

// config reads them: the round trips (without the agent), the short
// streams and the path-MTU period (0: never).
func (f *watchFlags) config() (cfg watch.Config, sc watch.StreamConfig, mtuStep time.Duration, err error) {
	cfg = watch.Config{Rate: *f.rate}
	if *f.rate < 0.1 || *f.rate > 1000 {
		return cfg, sc, 0, usagef("--rate %g: use 0.1 to 1000 round trips per second", *f.rate)
	}
	for _, v := range []struct {
		flag, val string
		n         *int64
	}{{"--request", *f.request, &cfg.Request}, {"--response", *f.response, &cfg.Response}} {
		if *v.n, err = metric.ParseSize(v.val); err != nil {
			return cfg, sc, 0, usagef("%s: %v", v.flag, err)
		}
		if *v.n < 1 || *v.n > 1<<20 {
			return cfg, sc, 0, usagef("%s %s: use 1 byte to 1M", v.flag, v.val)
		}
	}
	if cfg.Interval, err = intervalFlag(*f.interval); err != nil {
		return cfg, sc, 0, err
	}
	if cfg.Duration, _, err = untilFlag(*f.duration); err != nil {
		return cfg, sc, 0, err
	}
	if *f.streamEvery != "0" {
		if sc.Every, err = positiveDuration("--stream-every", *f.streamEvery); err != nil {
			return cfg, sc, 0, err
		}
	}
	if sc.Duration, err = positiveDuration("--stream-duration", *f.streamDuration); err != nil {
		return cfg, sc, 0, err
	}
	if sc.Duration < 100*time.Millisecond {
		return cfg, sc, 0, usagef("--stream-duration %s: use at least 100ms", *f.streamDuration)
	}
	switch *f.streamDir {
	case "up":
		sc.Directions = []string{result.DirUp}
	case "down":
		sc.Directions = []string{result.DirDown}
	case "both":
		sc.Directions = []string{result.DirUp, result.DirDown}
	default:
		return cfg, sc, 0, usagef("--stream-direction %q: use up, down or both", *f.streamDir)
	}
	if busy := streamBusy(sc); sc.Every > 0 && sc.Every < 2*busy {
		return cfg, sc, 0, usagef("--stream-every %s with --stream-duration %s (%s): the streams would fill half the time or more; use --stream-every %s or more",
			*f.streamEvery, *f.streamDuration, *f.streamDir, metric.FlagDuration(2*busy))
	}
	if *f.mtuEvery != "0" {
		if mtuStep, err = positiveDuration("--mtu-every", *f.mtuEvery); err != nil {
			return cfg, sc, 0, err
		}
		if mtuStep < time.Minute {
			return cfg, sc, 0, usagef("--mtu-every %s: use at least 1m (or 0: never)", *f.mtuEvery)
		}
	}
	return cfg, sc, mtuStep, nil
}

// streamBusy is how long one link's short streams take, all directions.
func streamBusy(sc watch.StreamConfig) time.Duration {
	return time.Duration(len(sc.Directions)) * sc.Duration
}

func watchCmd(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "watch")
	var af agentFlags
	to := fs.String("to", "", "the agent: HOST or HOST:PORT (default port 7447)")
	af.register(fs)
	var wf watchFlags
	wf.register(fs, 5, "5m")
	name := fs.String("name", "", "a name for this link, added to every metric as the label target (letters, digits, . _ -; at most 63)")
	if err := parse(fs, args); err != nil {
		return err
	}
	opts, err := af.to(env, *to)
	if err != nil {
		return err
	}
	cfg, sc, mtuStep, err := wf.config()
	if err != nil {
		return err
	}
	cfg.Client = opts
	stopMetrics := func() {}
	if *name != "" && !watchName.MatchString(*name) {
		return usagef("--name %q: use letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", *name)
	}

	exp := prom.NewWatch(Version, *name)
	asJSON := *wf.asJSON
	out := output(env, asJSON)
	c := command.Watch{Agent: opts, Watch: cfg, Stream: sc, StreamDir: *wf.streamDir, MTUEvery: mtuStep, Name: *name,
		Polled: exp.Update, Ended: ctrlC}
	if listen := *wf.promListen; listen != "" {
		c.Ready = serveWhenReady(env, listen, exp.Registry(), asJSON, &stopMetrics)
	}
	defer func() { stopMetrics() }()
	rep, err := c.Run(ctx, coreEnv(env, out, asJSON))
	if err == nil && ctrlC(ctx) {
		// The summary of a watch Ctrl-C ended is written as any other.
		ctx = context.WithoutCancel(ctx)
	}
	return written(ctx, out, rep, err)
}

// serveWhenReady is a watch's Ready: it serves reg at listen once the
// agents have accepted what the watch asks (a refused watch serves
// nothing), says where (on standard error with --json, standard output
// being the records alone: the port a :0 was given), and leaves in *stop
// what ends it.
func serveWhenReady(env Env, listen string, reg *prometheus.Registry, asJSON bool, stop *func()) func() error {
	return func() error {
		at, end, err := serveMetrics(listen, reg)
		if err != nil {
			return usagef("--prometheus-listen %s: %v", listen, err)
		}
		*stop = end
		w := env.Stdout
		if asJSON {
			w = env.Stderr
		}
		fmt.Fprintf(w, "serving Prometheus metrics at http://%s/metrics\n", at)
		return nil
	}
}
