package cli

import (
	"context"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	commitprobe "github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/result"
)

// netCommit is `narrows net commit`: synchronous log shipping, emulated.
// Without --ack, --flush or --path, against an agent that writes no files
// (no --disk-path), it runs --ack receive and says so; asked for write or
// flush there, it refuses (exit 2) saying what to change.
func netCommit(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "net commit")
	var nf netFlags
	nf.register(fs, "10s")
	def := command.DefaultNetCommit(client.Options{}).Commit
	block := fs.String("block", "8K", "log block size, 512B to 1M: 8K is a PostgreSQL WAL page, SQL Server writes 512B to 60K")
	inFlight := fs.Int("in-flight", def.InFlight, "blocks sent before waiting for an acknowledgement: 1 is one session committing; more is the log stream of a bulk operation")
	ack := fs.String("ack", def.Ack, "when the agent acknowledges a block: receive (read off the socket), write (written to its file, in the page cache), flush (durable)")
	flush := fs.String("flush", def.Flush, "how --ack flush makes blocks durable: fdatasync (write, then fdatasync) or dsync (O_DSYNC writes)")
	path := fs.String("path", "", "directory on the agent for its log file, inside its --disk-path (default: its first --disk-path)")
	size := fs.String("size", "", "the agent's log file, written round and round (default 64M, or room for twice the blocks in flight)")
	if err := parse(fs, args); err != nil {
		return err
	}
	set := given(fs)
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
	rep, err := command.NetCommit{Agent: s.opts, Commit: cfg}.Run(ctx, coreEnv(env, s.out, nf.json))
	return written(ctx, s.out, rep, err)
}
