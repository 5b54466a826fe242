package commit

import (
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// Config is what to measure.
type Config struct {
	Block    int64
	InFlight int
	Ack      string // result.AckReceive, AckWrite or AckFlush ("": AckFlush)
	Flush    string // with AckFlush: result.FlushFdatasync ("") or FlushDsync
	// Path is a directory on the agent for the log file ("": the agent's
	// first --disk-path); Size the file's size (0: DefaultSize, or room
	// for twice the blocks in flight when that is more).
	Path     string
	Size     int64
	Duration time.Duration
	Interval time.Duration
	// Fallback: against an agent that writes no files (no --disk-path),
	// run AckReceive instead of refusing, and say so in the result's
	// Notes. For a run whose acknowledgement point nobody chose.
	Fallback bool
	// Started, if set, is called once the agent has accepted the test and
	// laid its file out, just before the first block goes: res holds the
	// resolved Config, the Target and the Notes.
	Started func(res *result.Commit)
}

// DefaultSize is the log file's size unless asked: 64 MiB, four of
// PostgreSQL's WAL segments, large enough that the page cache is not
// rewriting the same few pages.
const DefaultSize = 64 << 20

// AckSize is the size of one acknowledgement.
const AckSize = 8

// Spec is the test the agent is asked for.
func Spec(cfg Config) wire.TestSpec {
	c := &wire.CommitSpec{Ack: cfg.Ack, Flush: cfg.Flush, InFlight: cfg.InFlight, Path: cfg.Path, Size: cfg.Size}
	return wire.TestSpec{Kind: wire.KindCommit, Duration: cfg.Duration, Interval: cfg.Interval, Block: cfg.Block, Commit: c}
}

// CheckSpec says what is wrong with a commit test, in the words of `net
// commit`'s flags: the command checks what a person typed with it, and
// the agent what a client sent.
func CheckSpec(spec wire.TestSpec) error {
	c := spec.Commit
	if c == nil {
		return fmt.Errorf("commit: the test names no acknowledgement point")
	}
	switch c.Ack {
	case result.AckReceive, result.AckWrite, result.AckFlush:
	default:
		return fmt.Errorf("--ack %q: use receive, write or flush", c.Ack)
	}
	switch {
	case c.Ack == result.AckFlush && c.Flush != result.FlushFdatasync && c.Flush != result.FlushDsync:
		return fmt.Errorf("--flush %q: use fdatasync or dsync", c.Flush)
	case c.Ack != result.AckFlush && c.Flush != "":
		return fmt.Errorf("--flush %s goes with --ack flush (--ack %s makes nothing durable)", c.Flush, c.Ack)
	case spec.Block < wire.MinCommitBlock || spec.Block > wire.MaxCommitBlock:
		return fmt.Errorf("--block %s: use %s to %s (a log block: PostgreSQL's WAL page is 8 KiB, SQL Server writes 512 B to 60 KiB)",
			metric.FormatBytes(spec.Block), metric.FormatBytes(wire.MinCommitBlock), metric.FormatBytes(wire.MaxCommitBlock))
	case c.InFlight < 1 || c.InFlight > wire.MaxCommitInFlight:
		return fmt.Errorf("--in-flight %d: use 1 to %d", c.InFlight, wire.MaxCommitInFlight)
	case c.Ack == result.AckReceive:
		if c.Path != "" || c.Size != 0 {
			return fmt.Errorf("--ack receive writes no file: --path and --size go with --ack write or flush")
		}
		return nil
	case c.Size < wire.MinCommitFile:
		return fmt.Errorf("--size %s: the log file is at least %s", metric.FormatBytes(c.Size), metric.FormatBytes(wire.MinCommitFile))
	case usable(c.Size) < spec.Block*int64(c.InFlight):
		return fmt.Errorf("--size %s holds fewer than --in-flight %d blocks of %s: use --size %s or more",
			metric.FormatBytes(c.Size), c.InFlight, metric.FormatBytes(spec.Block), metric.FormatBytes(roundMiB(spec.Block*int64(c.InFlight))))
	}
	return nil
}

// usable is what of a log file of size bytes is written: the test file is
// laid out in whole MiB.
func usable(size int64) int64 { return size / wire.MinCommitFile * wire.MinCommitFile }

func roundMiB(n int64) int64 {
	return (n + wire.MinCommitFile - 1) / wire.MinCommitFile * wire.MinCommitFile
}

// resolve fills in what cfg leaves to the agent (the directory, the file's
// size) and what it leaves to the defaults, against the agent's limits;
// it returns why the test cannot run there, in words, or notes.
func resolve(cfg *Config, addr string, lim wire.Limits) (notes []string, _ error) {
	if cfg.Ack == "" {
		cfg.Ack = result.AckFlush
	}
	if cfg.Ack == result.AckFlush && cfg.Flush == "" {
		cfg.Flush = result.FlushFdatasync
	}
	if cfg.Ack != result.AckReceive && len(lim.DiskPaths) == 0 {
		if !cfg.Fallback {
			return nil, probe.UserErrorf(nil, "--ack %s: the agent at %s writes no files (it was started without --disk-path), so it acknowledges on receipt only: restart it with --disk-path DIR (a directory on the replica's log volume), or use --ack receive",
				cfg.Ack, addr)
		}
		notes = append(notes, fmt.Sprintf("receive only: the agent at %s writes no files (it was started without --disk-path), so each block was acknowledged once read off the socket, neither written nor flushed; for --ack write and flush start it with --disk-path DIR (a directory on the replica's log volume)", addr))
		cfg.Ack, cfg.Flush, cfg.Path, cfg.Size = result.AckReceive, "", "", 0
	}
	if cfg.Ack == result.AckReceive {
		cfg.Path, cfg.Size = "", 0 // nothing written: no file
		return notes, nil
	}
	if cfg.Path == "" {
		cfg.Path = lim.DiskPaths[0]
	}
	if cfg.Size == 0 {
		cfg.Size = max(DefaultSize, roundMiB(2*cfg.Block*int64(cfg.InFlight)))
		if lim.MaxDiskSize > 0 && cfg.Size > lim.MaxDiskSize && usable(lim.MaxDiskSize) >= cfg.Block*int64(cfg.InFlight) {
			cfg.Size = usable(lim.MaxDiskSize)
		}
	}
	return notes, nil
}

// fits refuses, before anything runs, a test past the agent's limits, in
// words that say which flag to change.
func fits(spec wire.TestSpec, addr string, lim wire.Limits) error {
	c := spec.Commit
	if most := lim.MaxDuration; most > 0 && spec.Duration > most {
		return probe.UserErrorf(nil, "--duration %s: the agent at %s allows tests of up to %s (its --max-duration)", spec.Duration, addr, most)
	}
	if most := lim.MaxBlock; most > 0 && spec.Block > most {
		return probe.UserErrorf(nil, "--block %s: the agent at %s allows blocks of up to %s", metric.FormatBytes(spec.Block), addr, metric.FormatBytes(most))
	}
	if most := lim.MaxTestMemory; most > 0 && spec.Buffers() > most {
		fit := most / spec.Block
		return probe.UserErrorf(nil, "--in-flight %d blocks of %s need %s of buffers on the agent at %s, which allows %s per test (its --max-test-memory): use --in-flight %d or fewer, or a smaller --block",
			c.InFlight, metric.FormatBytes(spec.Block), metric.FormatBytes(spec.Buffers()), addr, metric.FormatBytes(most), max(fit, 1))
	}
	if most := lim.MaxDiskSize; c.Ack != result.AckReceive && most > 0 && c.Size > most {
		return probe.UserErrorf(nil, "--size %s: the agent at %s allows test files up to %s (its --max-disk-size)", metric.FormatBytes(c.Size), addr, metric.FormatBytes(most))
	}
	return nil
}
