package command

import (
	"context"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/loaded"
	"github.com/narrows/narrows/internal/result"
)

// UnderLoad is net rr's --under-load: the load its round trips run under
// after their idle third.
type UnderLoad struct {
	// Streams fill the path (1 to 64), Direction says which way:
	// result.DirUp (this host sends, as a backup pushed from here),
	// DirDown (the agent sends) or DirBoth.
	Streams   int
	Direction string
	// Warmup is how long the load runs before the loaded round trips
	// begin: a queue takes a moment to build.
	Warmup time.Duration
}

// DefaultUnderLoad is --under-load with the flags' defaults: 4 streams
// toward the agent, after a second's warm-up.
func DefaultUnderLoad() UnderLoad {
	return UnderLoad{Streams: 4, Direction: result.DirUp, Warmup: time.Second}
}

// loadWords say which way the load goes, for the banner.
var loadWords = map[string]string{result.DirUp: "toward the agent", result.DirDown: "from the agent", result.DirBoth: "both ways"}

// LongestRR is the longest --duration (in whole seconds) of round trips
// under this load that an agent allowing tests of up to most (its
// --max-duration) takes: the load runs the warm-up, the loaded two thirds
// of the duration and a little more. 0: none does.
func (u UnderLoad) LongestRR(most time.Duration) time.Duration {
	room := most - u.Warmup - loaded.LoadTail
	if room <= 0 {
		return 0
	}
	return (room * 3 / 2).Truncate(time.Second)
}

// runUnderLoad runs net rr --under-load: a third of RR.Duration idle, the
// rest under the load, after its warm-up.
func (c NetRR) runUnderLoad(ctx context.Context, env Env) (*result.Report, error) {
	u, rc := c.UnderLoad, c.RR
	cfg := loaded.Config{Streams: u.Streams, Direction: u.Direction, Warmup: u.Warmup, Interval: rc.Interval,
		Request: rc.Request, Response: rc.Response, Queries: rc.Queries}
	cfg.Idle = rc.Duration / 3
	cfg.Loaded = rc.Duration - cfg.Idle
	sess, err := Connect(ctx, c.Agent)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	addr := c.Agent.Addr
	if most := sess.Limits.MaxTests; most > 0 && most < 2 {
		return nil, errext.Userf(nil, "--under-load runs the load and the round trips as two tests at once; the agent at %s allows %d (its --max-tests): restart it with --max-tests 2 or more", addr, most)
	}
	// The load runs the warm-up, the loaded round trips and a little more.
	if load := cfg.Warmup + cfg.Loaded + loaded.LoadTail; sess.Limits.MaxDuration > 0 && load > sess.Limits.MaxDuration {
		return nil, errext.Userf(nil, "--under-load: the load would run %s, past the agent's %s (its --max-duration): use a shorter --duration or --warmup",
			metric.FlagDuration(load), metric.FlagDuration(sess.Limits.MaxDuration))
	}
	rep := env.agentReport("net rr", addr, sess)
	env.say(fmt.Sprintf("narrows net rr --under-load → %s: round trips idle for %s, then while %d streams fill the path %s (after a %s warm-up) for %s",
		addr, metric.FlagDuration(cfg.Idle), cfg.Streams, loadWords[cfg.Direction], metric.FlagDuration(cfg.Warmup), metric.FlagDuration(cfg.Loaded)))
	res, runErr := loaded.Run(ctx, sess, c.Agent, cfg, env.emit())
	rep.Loaded = res
	return Finish(ctx, env.Tool, rep, runErr)
}
