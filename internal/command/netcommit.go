package command

import (
	"context"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	commitprobe "github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// NetCommit is `narrows net commit`: synchronous log shipping, emulated.
// With Commit.Fallback (no acknowledgement point chosen), against an
// agent that writes no files (no --disk-path), it runs AckReceive and
// says so; asked for AckWrite or AckFlush there, it refuses (a user
// error) saying what to change.
type NetCommit struct {
	Agent client.Options
	// Commit is the test; its Started hook, if set, is called after the
	// banner is said.
	Commit commitprobe.Config
}

// DefaultNetCommit is net commit to the agent at agent with the flags'
// defaults: 8 KiB blocks (a PostgreSQL WAL page), one in flight,
// acknowledged once durable by fdatasync, for 10 s reported each second;
// falling back to acknowledging on receipt when the agent writes no files.
func DefaultNetCommit(agent client.Options) NetCommit {
	return NetCommit{Agent: agent, Commit: commitprobe.Config{Block: 8 << 10, InFlight: 1, Ack: result.AckFlush,
		Flush: result.FlushFdatasync, Duration: 10 * time.Second, Interval: time.Second, Fallback: true}}
}

// ackWords say what each acknowledgement point waits for, for the banner.
var ackWords = map[string]string{
	result.AckReceive: "acknowledged once read off the socket",
	result.AckWrite:   "acknowledged once written to the agent's file (its page cache)",
	result.AckFlush:   "acknowledged once durable on the agent",
}

// Run measures the commits.
func (c NetCommit) Run(ctx context.Context, env Env) (*result.Report, error) {
	cfg := c.Commit
	// What can be checked here is, before anything is dialled.
	check := commitprobe.Spec(cfg)
	if check.Commit.Ack != result.AckReceive && check.Commit.Size == 0 {
		check.Commit.Size = max(commitprobe.DefaultSize, cfg.Block*int64(cfg.InFlight))
	}
	if err := commitprobe.CheckSpec(check); err != nil {
		return nil, errext.Userf(nil, "%v", err)
	}
	sess, err := Connect(ctx, c.Agent)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	addr := c.Agent.Addr
	if !sess.Runs(wire.KindCommit) {
		release := "an earlier release"
		if sess.Software != "" {
			release = "narrows " + sess.Software
		}
		return nil, errext.Userf(nil, "the agent at %s (%s) does not run net commit: upgrade it to narrows %s or later", addr, release, env.Tool.Version)
	}
	if err := fitsAgent(sess, addr, cfg.Duration); err != nil {
		return nil, err
	}
	rep := env.agentReport("net commit", addr, sess)
	started := cfg.Started
	cfg.Started = func(res *result.Commit) {
		env.say(commitBanner(addr, res, cfg.Duration))
		if started != nil {
			started(res)
		}
	}
	res, runErr := commitprobe.Run(ctx, sess, cfg, env.emit())
	if res.Commits == 0 && runErr != nil && ctx.Err() == nil {
		return nil, runErr // refused, or failed before anything was measured
	}
	rep.Commit = res
	return Finish(ctx, env.Tool, rep, runErr)
}

// commitBanner is what a commit run to addr says once the agent has
// accepted it: the resolved test (res.Config) and the agent's file.
func commitBanner(addr string, res *result.Commit, d time.Duration) string {
	c := res.Config
	flight := "one in flight (one session committing)"
	if c.InFlight > 1 {
		flight = fmt.Sprintf("%d in flight", c.InFlight)
	}
	ack := ackWords[c.Ack]
	if c.Ack == result.AckFlush {
		ack += " (" + c.Flush + ")"
	}
	if t := res.Target; t != nil {
		ack += " in " + t.Path
		if t.Filesystem != "" {
			ack += " (" + t.Filesystem + ")"
		}
	}
	return fmt.Sprintf("narrows net commit → %s: %s blocks, %s, %s, %s", addr, metric.FormatBytes(c.BlockBytes), flight, ack, metric.FlagDuration(d))
}
