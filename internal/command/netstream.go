package command

import (
	"context"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// NetStream is `narrows net stream`: one stream to or from the agent, then
// Stream.Streams of them, for Stream.Duration each.
type NetStream struct {
	Agent  client.Options
	Stream stream.Config
}

// DefaultNetStream is net stream to the agent at agent with the flags'
// defaults: one stream forward for 10 s, reported each second, in 128 KiB
// writes, the systems' own socket buffers.
func DefaultNetStream(agent client.Options) NetStream {
	return NetStream{Agent: agent, Stream: stream.Config{Direction: wire.Forward, Streams: 1, Duration: 10 * time.Second,
		Interval: time.Second, Block: 128 << 10}}
}

// fitsAgent refuses, before anything runs, a test longer than the agent
// allows: a refusal mid-run would leave an empty table marked partial.
func fitsAgent(sess *client.Session, addr string, d time.Duration) error {
	if most := sess.Limits.MaxDuration; most > 0 && d > most {
		return errext.Userf(nil, "--duration %s: the agent at %s allows tests of up to %s (its --max-duration): use --duration %s or less, or restart the agent with --max-duration %s",
			metric.FlagDuration(d), addr, metric.FlagDuration(most), metric.FlagDuration(most), metric.FlagDuration(d))
	}
	return nil
}

// streamFits refuses, up front and in words, streams the agent at addr
// would refuse mid-run: more memory, data connections or time than it
// allows a test. flag is what asks for the streams (--streams,
// --streams-per-host).
func streamFits(sess *client.Session, addr string, cfg stream.Config, flag string) error {
	spec := wire.TestSpec{Kind: wire.KindStream, Direction: cfg.Direction, Streams: cfg.Streams, Block: cfg.Block}
	if most := sess.Limits.MaxTestMemory; most > 0 && spec.Buffers() > most {
		fix := "use a smaller --block"
		if cfg.Direction != wire.Reverse {
			one := spec
			one.Streams = 0
			if fit := (most - one.Buffers()) / wire.SinkBuffer(cfg.Block); fit >= 1 {
				fix = fmt.Sprintf("use %s %d or fewer, or a smaller --block", flag, fit)
			}
		}
		return errext.Userf(nil, "%s %d (%s) of %s blocks needs %s of buffers on the agent at %s, which allows %s per test (its --max-test-memory): %s",
			flag, cfg.Streams, cfg.Direction, metric.FormatBytes(cfg.Block), metric.FormatBytes(spec.Buffers()), addr, metric.FormatBytes(most), fix)
	}
	if err := fitsAgent(sess, addr, cfg.Duration); err != nil {
		return err
	}
	if most := sess.Limits.MaxDataConns; most > 0 && spec.DataConns() > most {
		per := most
		if cfg.Direction == wire.Bidir {
			per = most / 2
		}
		return errext.Userf(nil, "%s %d (%s) needs %d data connections; the agent at %s allows %d per test: use %s %d or fewer, or raise the agent's --max-conns",
			flag, cfg.Streams, cfg.Direction, spec.DataConns(), addr, most, flag, per)
	}
	return nil
}

// Run measures the streams.
func (c NetStream) Run(ctx context.Context, env Env) (*result.Report, error) {
	cfg := c.Stream
	sess, err := Connect(ctx, c.Agent)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	addr := c.Agent.Addr
	if err := streamFits(sess, addr, cfg, "--streams"); err != nil {
		return nil, err
	}
	rep := env.agentReport("net stream", addr, sess)
	phases := "1 stream"
	if cfg.Streams > 1 {
		phases = fmt.Sprintf("1 stream, then %d streams", cfg.Streams)
	}
	if cfg.TryRPS {
		phases += fmt.Sprintf(", then 1 as is and 1 with the receive steered off its busiest core, in turn, %d to %d pairs", result.MinTryPairs, result.MaxTryPairs)
	}
	if cfg.TryOffloads {
		phases += fmt.Sprintf(", then 1 as is and 1 with the offloads on, in turn, %d to %d pairs", result.MinTryPairs, result.MaxTryPairs)
	}
	env.say(fmt.Sprintf("narrows net stream → %s: %s, %s, %s each, %s blocks", addr, phases, cfg.Direction, metric.FlagDuration(cfg.Duration), metric.FormatBytes(cfg.Block)))
	res, runErr := stream.Run(ctx, sess, cfg, env.emit())
	rep.Stream = res
	return Finish(ctx, env.Tool, rep, runErr)
}
