package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/compress"
	"github.com/narrows/narrows/internal/wire"
)

// The cpu test: compression and decompression per core on the agent's
// own CPUs, measured by probe/compress on the synthetic corpus of database
// pages (a client's plan measures the same bytes on its side: the same
// seed and size), so a backup plan knows what the backup host's cores
// give. It touches no file.

// checkCPU refuses a cpu test outside the agent's limits.
func (s *Server) checkCPU(spec wire.TestSpec) error {
	c := spec.CPU
	if c == nil {
		return errors.New("cpu: the test names no codecs")
	}
	names, err := compress.ParseCodecs(strings.Join(c.Codecs, ","))
	if err != nil {
		return err
	}
	if c.SampleBytes < 1<<20 || c.SampleBytes > wire.MaxCPUSample {
		return fmt.Errorf("cpu: a sample of %s: the agent generates 1 MiB to %s", metric.FormatBytes(c.SampleBytes), metric.FormatBytes(wire.MaxCPUSample))
	}
	// Each codec compresses and decompresses for the duration, after one
	// whole pass (which one slow codec may take a while over).
	if n := time.Duration(2*len(names)) * spec.Duration; n > s.cfg.MaxDuration {
		return fmt.Errorf("cpu: %d codecs × %s each way: the agent allows up to %s per test (its --max-duration)", len(names), spec.Duration, s.cfg.MaxDuration)
	}
	return nil
}

func (s *Server) openCPU(spec wire.TestSpec) (farTest, *wire.RemoteError) {
	return &cpuTest{s: s, spec: spec}, nil
}

// cpuTest is a cpu test: its sample is made in prepare.
type cpuTest struct {
	s      *Server
	spec   wire.TestSpec
	sample compress.Sample
}

func (c *cpuTest) accepted(*wire.Accepted) {}

func (c *cpuTest) prepare(ctx context.Context) error {
	var err error
	c.sample, err = compress.Synthetic(c.spec.CPU.SampleBytes, c.spec.CPU.Seed)
	return err
}

func (c *cpuTest) run(ctx context.Context, _ probe.Emit, done *wire.Done) error {
	res, err := compress.Measure(ctx, c.sample, compress.Config{Codecs: c.spec.CPU.Codecs, Duration: c.spec.Duration})
	done.Compression = res
	if errext.IsUser(err) {
		return refusedError{err}
	}
	return err
}

// limit: the codecs each way, and one whole first pass of each, which a
// slow codec on a slow core takes seconds over: the agent's own limit.
func (c *cpuTest) limit() time.Duration { return c.s.cfg.MaxDuration }

func (c *cpuTest) close() { c.sample = compress.Sample{} }
