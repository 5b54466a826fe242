package disk

import (
	"slices"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/wire"
)

// Spec is cfg as a far-side test asks an agent for it: the same patterns,
// run there by this package (ConfigOf) on a test file of the agent's own.
func Spec(cfg Config) wire.TestSpec {
	d := &wire.DiskSpec{Path: cfg.Dir, Size: cfg.Size, Profiles: cfg.Profiles, Buffered: cfg.Buffered, Engine: cfg.Engine, Seed: cfg.Seed,
		Histograms: cfg.Histograms}
	for _, p := range cfg.Patterns {
		d.Patterns = append(d.Patterns, wire.DiskPattern{Profile: p.Profile, RW: string(p.RW), ReadPercent: p.ReadPercent,
			Block: p.Block, QD: p.QD, Threads: p.Threads, Sync: p.Sync})
	}
	return wire.TestSpec{Kind: wire.KindDisk, Duration: cfg.Duration, Interval: cfg.Interval, Disk: d}
}

// ConfigOf is the Config a far-side disk test runs; Check says what is
// wrong with it.
func ConfigOf(spec wire.TestSpec) Config {
	d := spec.Disk
	if d == nil {
		return Config{Duration: spec.Duration, Interval: spec.Interval}
	}
	cfg := Config{Dir: d.Path, Size: d.Size, Profiles: d.Profiles, Duration: spec.Duration, Interval: spec.Interval,
		Buffered: d.Buffered, Engine: d.Engine, Seed: d.Seed, Histograms: d.Histograms}
	for _, p := range d.Patterns {
		cfg.Patterns = append(cfg.Patterns, Pattern{Profile: p.Profile, RW: RW(p.RW), ReadPercent: p.ReadPercent,
			Block: p.Block, QD: p.QD, Threads: p.Threads, Sync: p.Sync})
	}
	return cfg
}

// MinSize is the smallest test file: the layout writes it in whole MiB.
const MinSize = layoutChunk

// Check says what is wrong with a configuration, in the words of
// `narrows disk`'s flags: the engine, the timing, every pattern, and (for
// a test file) its size, large enough for each pattern's threads. The
// command checks what a person typed with it, and an agent what a client
// sent.
func (c Config) Check() error {
	switch c.Engine {
	case EngineAuto, EngineURing, EngineIOCP, EnginePortable:
	default:
		return userErrorf(nil, "--engine %q: use auto, io_uring (Linux), iocp (Windows) or portable", c.Engine)
	}
	if c.Duration <= 0 || c.Interval < 10*time.Millisecond {
		return userErrorf(nil, "--duration must be more than zero and --interval at least 10ms")
	}
	if c.Device == "" && c.Size < MinSize {
		return userErrorf(nil, "--size %s: use at least 1M", metric.FormatBytes(c.Size))
	}
	if len(c.Patterns) == 0 {
		return userErrorf(nil, "no pattern to run: give --profile, or the custom flags")
	}
	for _, name := range c.Profiles {
		if !slices.Contains(ProfileOrder, name) || len(c.Profiles) > len(ProfileOrder) {
			return userErrorf(nil, "--profile %q: use data, log, backup or custom, comma-separated", name)
		}
	}
	for _, p := range c.Patterns {
		if !slices.Contains(ProfileOrder, p.Profile) {
			return userErrorf(nil, "a pattern of profile %q: the profiles are data, log, backup and custom", p.Profile)
		}
		if err := p.Check(!c.Buffered); err != nil {
			return userErrorf(err, "%v", err)
		}
		if c.Device == "" && p.Block*int64(p.Threads) > c.Size {
			return userErrorf(nil, "--size %s is too small for %s: use at least %s", metric.FormatBytes(c.Size), p.Name(), metric.FormatBytes(p.Block*int64(p.Threads)))
		}
	}
	return nil
}
