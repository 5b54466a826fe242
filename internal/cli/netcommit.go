package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/narrows/narrows/internal/metric"
	commitprobe "github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// ackWords says what each acknowledgement point waits for, for the banner.
var ackWords = map[string]string{
	result.AckReceive: "acknowledged once read off the socket",
	result.AckWrite:   "acknowledged once written to the agent's file (its page cache)",
	result.AckFlush:   "acknowledged once durable on the agent",
}

// netCommit is `narrows net commit`: synchronous log shipping, emulated.
// Without --ack, --flush or --path, against an agent that writes no files
// (no --disk-path), it runs --ack receive and says so; asked for write or
// flush there, it refuses (exit 2) saying what to change.
func netCommit(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "net commit")
	var nf netFlags
	nf.register(fs, "10s")
	block := fs.String("block", "8K", "log block size, 512B to 1M: 8K is a PostgreSQL WAL page, SQL Server writes 512B to 60K")
	inFlight := fs.Int("in-flight", 1, "blocks sent before waiting for an acknowledgement: 1 is one session committing; more is the log stream of a bulk operation")
	ack := fs.String("ack", result.AckFlush, "when the agent acknowledges a block: receive (read off the socket), write (written to its file, in the page cache), flush (durable)")
	flush := fs.String("flush", result.FlushFdatasync, "how --ack flush makes blocks durable: fdatasync (write, then fdatasync) or dsync (O_DSYNC writes)")
	path := fs.String("path", "", "directory on the agent for its log file, inside its --disk-path (default: its first --disk-path)")
	size := fs.String("size", "", "the agent's log file, written round and round (default 64M, or room for twice the blocks in flight)")
	if err := parse(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	s, err := nf.setup(env)
	if err != nil {
		return err
	}
	cfg := commitprobe.Config{InFlight: *inFlight, Ack: *ack, Path: *path, Duration: s.duration, Interval: s.interval,
		Fallback: !set["ack"] && !set["flush"] && !set["path"] && !set["size"]}
	if cfg.Block, err = metric.ParseSize(*block); err != nil {
		return usagef("--block: %v", err)
	}
	if *ack == result.AckFlush {
		cfg.Flush = *flush
	} else if set["flush"] {
		return usagef("--flush %s goes with --ack flush (--ack %s makes nothing durable)", *flush, *ack)
	}
	if *size != "" {
		if cfg.Size, err = metric.ParseSize(*size); err != nil {
			return usagef("--size: %v", err)
		}
	}
	// What can be checked here is, before anything is dialled.
	check := commitprobe.Spec(cfg)
	if check.Commit.Ack != result.AckReceive && check.Commit.Size == 0 {
		check.Commit.Size = max(commitprobe.DefaultSize, cfg.Block*int64(cfg.InFlight))
	}
	if err := commitprobe.CheckSpec(check); err != nil {
		return usagef("%v", err)
	}
	sess, err := connect(ctx, s.opts)
	if err != nil {
		return err
	}
	defer sess.Close()
	if !sess.Runs(wire.KindCommit) {
		release := "an earlier release"
		if sess.Software != "" {
			release = "narrows " + sess.Software
		}
		return usagef("the agent at %s (%s) does not run net commit: upgrade it to narrows %s or later", s.opts.Addr, release, Version)
	}
	if err := s.fits(sess); err != nil {
		return err
	}
	rep := result.NewReport("net commit", s.opts.Addr, tool(), env.Now())
	fromAgent(rep, sess)
	cfg.Started = func(res *result.Commit) {
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
		banner(env, nf.json, "narrows net commit → %s: %s blocks, %s, %s, %s", s.opts.Addr, metric.FormatBytes(c.BlockBytes), flight, ack, metric.FlagDuration(s.duration))
	}
	res, runErr := commitprobe.Run(ctx, sess, cfg, emitter(s.out))
	if res.Commits == 0 && runErr != nil && ctx.Err() == nil {
		return runErr // refused, or failed before anything was measured
	}
	rep.Commit = res
	return finish(ctx, s.out, rep, runErr)
}
