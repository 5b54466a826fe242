package command

import (
	"context"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
)

// NetRR is `narrows net rr`: round trips on one connection, one request
// outstanding, for RR.Duration or RR.Count of them. With UnderLoad set it
// is `net rr --under-load` instead: round trips idle, then while streams
// fill the path (see UnderLoad).
type NetRR struct {
	Agent client.Options
	// RR is the round trips. With Count set, Duration is not read: the
	// run ends after Count round trips, bounded by countBound or the
	// agent's longest test.
	RR rr.Config
	// UnderLoad, when set, runs RR's round trips idle and then under a
	// load for RR.Duration (a third idle, the rest loaded), back to back:
	// its RR.Count and RR.Rate must be zero, its RR.Duration at least a
	// second (the command line refuses both before a Config is made).
	UnderLoad *UnderLoad
	// TryCoalescing then measures what the agent's receive interrupt
	// coalescing adds to a round trip, by experiment (rr.TryCoalescing):
	// up to rr.MaxCoalescingPairs pairs of rr.CoalescingBlock more.
	TryCoalescing bool
}

// DefaultNetRR is net rr to the agent at agent with the flags' defaults:
// 64 B requests and responses back to back for 10 s, reported each
// second, its arithmetic for 5,000 queries; no load.
func DefaultNetRR(agent client.Options) NetRR {
	return NetRR{Agent: agent, RR: rr.Config{Request: 64, Response: 64, Duration: 10 * time.Second,
		Interval: time.Second, Queries: 5000}}
}

// countBound is how long a run of RR.Count round trips may take at most,
// within the agent's limit on one test.
const countBound = 10 * time.Minute

// Run measures the round trips.
func (c NetRR) Run(ctx context.Context, env Env) (*result.Report, error) {
	if c.UnderLoad != nil {
		return c.runUnderLoad(ctx, env)
	}
	cfg := c.RR
	what := metric.FlagDuration(cfg.Duration)
	if cfg.Count > 0 {
		cfg.Duration = countBound
		what = metric.FormatCount(cfg.Count) + " round trips"
	}
	sess, err := Connect(ctx, c.Agent)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	addr := c.Agent.Addr
	if most := sess.Limits.MaxTestMemory; most > 0 && cfg.Request+cfg.Response > most {
		return nil, errext.Userf(nil, "--request %s and --response %s need %s of buffers on the agent at %s, which allows %s per test (its --max-test-memory): use smaller sizes",
			metric.FormatBytes(cfg.Request), metric.FormatBytes(cfg.Response), metric.FormatBytes(cfg.Request+cfg.Response), addr, metric.FormatBytes(most))
	}
	if cfg.Count == 0 {
		if err := fitsAgent(sess, addr, cfg.Duration); err != nil {
			return nil, err
		}
	}
	if most := sess.Limits.MaxDuration; most > 0 && cfg.Duration > most {
		cfg.Duration = most // the bound of a run of Count round trips
	}
	rep := env.agentReport("net rr", addr, sess)
	env.say(fmt.Sprintf("narrows net rr → %s: one connection, one request outstanding, %s request / %s response, %s",
		addr, metric.FormatBytes(cfg.Request), metric.FormatBytes(cfg.Response), what))
	res, runErr := rr.Run(ctx, sess, cfg, env.emit())
	rep.RR = res
	if c.TryCoalescing && runErr == nil && ctx.Err() == nil {
		env.say(fmt.Sprintf("then --try-coalescing: %s blocks of round trips, in pairs as is and with the agent's receive interrupt coalescing at its least, %d to %d pairs",
			metric.FlagDuration(rr.CoalescingBlock), rr.MinCoalescingPairs, rr.MaxCoalescingPairs))
		res.Coalescing, runErr = rr.TryCoalescing(ctx, sess, cfg)
	}
	return Finish(ctx, env.Tool, rep, runErr)
}
