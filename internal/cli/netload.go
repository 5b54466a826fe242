package cli

import (
	"context"
	"flag"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/loaded"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
)

// underLoadFlags are net rr's --under-load and its load's shape.
type underLoadFlags struct {
	on        bool
	streams   int
	direction string
	warmup    string
}

func (u *underLoadFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&u.on, "under-load", false, "round trips idle, then while --load-streams fill the path (a backup, a replica catching up): the queue it builds, and responsiveness")
	fs.IntVar(&u.streams, "load-streams", 4, "with --under-load: streams that fill the path")
	fs.StringVar(&u.direction, "load-direction", "up", "with --under-load: up (this host sends, as a backup pushed from here), down (the agent sends) or both")
	fs.StringVar(&u.warmup, "warmup", "1s", "with --under-load: how long the load runs before the loaded round trips begin")
}

// netRRUnderLoad runs net rr --under-load: a third of --duration idle,
// the rest under the load, after its warm-up.
func netRRUnderLoad(ctx context.Context, env Env, s *netSetup, rc rr.Config, u underLoadFlags, asJSON bool) error {
	cfg := loaded.Config{Streams: u.streams, Direction: u.direction, Interval: s.interval, Request: rc.Request, Response: rc.Response, Queries: rc.Queries}
	switch u.direction {
	case result.DirUp, result.DirDown, result.DirBoth:
	default:
		return usagef("--load-direction %q: use up, down or both", u.direction)
	}
	if u.streams < 1 || u.streams > 64 {
		return usagef("--load-streams %d: use 1 to 64", u.streams)
	}
	var err error
	if cfg.Warmup, err = positiveDuration("--warmup", u.warmup); err != nil {
		return err
	}
	if s.duration < time.Second {
		return usagef("--duration %s: --under-load needs at least 1s (a third idle, the rest under load)", metric.FlagDuration(s.duration))
	}
	cfg.Idle = s.duration / 3
	cfg.Loaded = s.duration - cfg.Idle
	sess, err := connect(ctx, s.opts)
	if err != nil {
		return err
	}
	defer sess.Close()
	if most := sess.Limits.MaxTests; most > 0 && most < 2 {
		return usagef("--under-load runs the load and the round trips as two tests at once; the agent at %s allows %d (its --max-tests): restart it with --max-tests 2 or more", s.opts.Addr, most)
	}
	// The load runs the warm-up, the loaded round trips and a little more.
	if load := cfg.Warmup + cfg.Loaded + loaded.LoadTail; sess.Limits.MaxDuration > 0 && load > sess.Limits.MaxDuration {
		return usagef("--under-load: the load would run %s, past the agent's %s (its --max-duration): use a shorter --duration or --warmup",
			metric.FlagDuration(load), metric.FlagDuration(sess.Limits.MaxDuration))
	}
	rep := result.NewReport("net rr", s.opts.Addr, tool(), env.Now())
	fromAgent(rep, sess)
	banner(env, asJSON, "narrows net rr --under-load → %s: round trips idle for %s, then while %d streams fill the path %s (after a %s warm-up) for %s",
		s.opts.Addr, metric.FlagDuration(cfg.Idle), cfg.Streams, loadWords[cfg.Direction], metric.FlagDuration(cfg.Warmup), metric.FlagDuration(cfg.Loaded))
	res, runErr := loaded.Run(ctx, sess, s.opts, cfg, emitter(s.out))
	rep.Loaded = res
	return finish(ctx, s.out, rep, runErr)
}

var loadWords = map[string]string{result.DirUp: "toward the agent", result.DirDown: "from the agent", result.DirBoth: "both ways"}
