package cli

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/compress"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// measureFlags are how `plan backup --to` measures the stages.
type measureFlags struct {
	to, dataPath, backupPath, stage, diskSize, sample string
	streams                                           int
	agent                                             agentFlags
}

// planStep is one measurement of the plan: what it says while it runs,
// and what it does.
type planStep struct {
	what string
	run  func(ctx context.Context) error
}

// measure runs every stage the flags make possible on this host and
// through the agent, saying on stderr which step of how many runs. A step
// that fails is named and leaves its stage unmeasured; the plan then says
// so rather than guessing.
func (mf measureFlags) measure(ctx context.Context, env Env, files int, codecs []string, s *result.BackupStages) (agentSoftware string, unauth bool, err error) {
	opts, err := mf.agent.options(env, "--to", mf.to)
	if err != nil {
		return "", false, err
	}
	dur, err := positiveDuration("--stage-duration", mf.stage)
	if err != nil {
		return "", false, err
	}
	size, err := metric.ParseSize(mf.diskSize)
	if err != nil || size < disk.MinSize {
		return "", false, usagef("--disk-size %q: %s", mf.diskSize, errOr(err, "use at least 1M"))
	}
	if mf.dataPath != "" {
		// Read by a backup, written by a restore: the test file goes there.
		if err := probe.CheckDir("--data-path", mf.dataPath, true); err != nil {
			return "", false, err
		}
	}
	sess, err := connect(ctx, opts)
	if err != nil {
		return "", false, err
	}
	defer sess.Close()
	streams := mf.streams
	if streams == 0 {
		streams = max(files, 4)
	}
	if most := sess.Limits.MaxDataConns; most > 0 && streams > most {
		streams = most
	}
	s.SourceCores = runtime.NumCPU()
	var steps []planStep
	if mf.dataPath != "" {
		steps = append(steps, planStep{"the data path, sequential read and write (" + mf.dataPath + ")", func(ctx context.Context) error {
			d, err := localBackupDisk(ctx, mf.dataPath, size, dur)
			s.SourceRead, s.SourceWrite = advisor.DiskStages(d, "measured")
			return err
		}})
	}
	for _, dir := range []struct {
		direction, what string
		into            *[]result.StreamRate
	}{{wire.Forward, "the network to the agent", &s.NetworkOut}, {wire.Reverse, "the network back from the agent", &s.NetworkIn}} {
		steps = append(steps, planStep{fmt.Sprintf("%s, 1 stream then %d", dir.what, streams), func(ctx context.Context) error {
			res, err := stream.Run(ctx, sess, stream.Config{Direction: dir.direction, Streams: streams, Duration: dur, Interval: time.Second, Block: 128 << 10},
				func(result.Interval) {})
			out, in := advisor.NetworkStages(res, "measured")
			*dir.into = append(out, in...)
			return err
		}})
	}
	if mf.backupPath != "" {
		steps = append(steps, planStep{"the backup path on the agent, sequential write and read (" + mf.backupPath + ")", func(ctx context.Context) error {
			d, err := farBackupDisk(ctx, sess, mf.backupPath, size, dur)
			s.TargetWrite, s.TargetRead = nil, nil
			if d != nil {
				r, w := advisor.DiskStages(d, "measured on the agent")
				s.TargetRead, s.TargetWrite = r, w
			}
			return err
		}})
	}
	if len(codecs) > 0 {
		steps = append(steps, mf.compressionSteps(sess, codecs, s)...)
	}
	for i, st := range steps {
		fmt.Fprintf(env.Stderr, "narrows plan backup: step %d of %d: %s\n", i+1, len(steps), st.what)
		if err := st.run(ctx); err != nil {
			if ctx.Err() != nil {
				return sess.Software, !sess.Authenticated, errInterrupted
			}
			var r *client.Refusal
			if errors.As(err, &r) {
				return sess.Software, !sess.Authenticated, fmt.Errorf("plan backup: %s: %w", st.what, err)
			}
			if errors.Is(err, client.ErrMisbehaved) {
				// Nothing it said is a figure to plan on.
				return sess.Software, !sess.Authenticated, fmt.Errorf("plan backup: %s: %w", st.what, err)
			}
			fmt.Fprintf(env.Stderr, "narrows plan backup: %s was not measured: %v\n", st.what, err)
		}
	}
	return sess.Software, !sess.Authenticated, nil
}

// backupPatterns are the backup profile: 1 MiB sequential read and write
// at QD8, as backup, restore and replica seeding stream.
func backupPatterns() []disk.Pattern { return disk.Profiles[result.ProfileBackup]() }

// localBackupDisk measures the backup profile on dir here, as `narrows
// disk --profile backup` does.
func localBackupDisk(ctx context.Context, dir string, size int64, dur time.Duration) (*result.Disk, error) {
	cfg := disk.Config{Dir: dir, Size: size, Duration: dur, Interval: time.Second, Engine: disk.EngineAuto, Seed: 1,
		Profiles: []string{result.ProfileBackup}, Patterns: backupPatterns()}
	return disk.Measure(ctx, cfg, disk.Hooks{}, func(result.Interval) {})
}

// farBackupDisk measures the backup profile on the agent's dir, as
// `narrows disk --on AGENT --profile backup` does.
func farBackupDisk(ctx context.Context, sess *client.Session, dir string, size int64, dur time.Duration) (*result.Disk, error) {
	if !sess.Runs(wire.KindDisk) {
		return nil, fmt.Errorf("the agent (narrows %s) does not run disk tests: upgrade it", sess.Software)
	}
	cfg := disk.Config{Dir: dir, Size: size, Duration: dur, Interval: time.Second, Engine: disk.EngineAuto, Seed: 1,
		Profiles: []string{result.ProfileBackup}, Patterns: backupPatterns()}
	done, err := sess.RunFar(ctx, disk.Spec(cfg), func(*wire.Accepted) error { return nil }, func(result.Interval) {})
	if done != nil && done.Disk != nil {
		return done.Disk, err
	}
	return nil, err
}

// Compression is measured on a sample of this size: big enough that a
// codec's window sees whole relations, small enough that the slowest
// (zlib's level 6, ~20 MB/s a core) makes its first pass in a second.
const (
	planSampleBytes = 16 << 20
	planSampleSeed  = 1
	planCodecTime   = time.Second
)

// compressionSteps measure the codecs here (on --sample, else the
// synthetic corpus) and on the agent (on the synthetic corpus, the same
// bytes: the sample stays on this host).
func (mf measureFlags) compressionSteps(sess *client.Session, codecs []string, s *result.BackupStages) []planStep {
	// With a sample, this host measures the synthetic pages too: the agent
	// only has those, and how this host's figures move from the pages to
	// the sample says how the agent's would (the ratio is the data's, the
	// speed on it the data's and the core's).
	var onSynthetic []result.CodecRate
	local := planStep{"compression on this host (" + strings.Join(codecs, ", ") + ")", func(ctx context.Context) error {
		synthetic, err := compress.Synthetic(planSampleBytes, planSampleSeed)
		if err != nil {
			return err
		}
		sample := synthetic
		if mf.sample != "" {
			if sample, err = compress.ReadSample(ctx, compress.SampleConfig{Path: mf.sample, Bytes: planSampleBytes}); err != nil {
				return err
			}
			syn, err := compress.Measure(ctx, synthetic, compress.Config{Codecs: codecs, Duration: planCodecTime})
			if err != nil {
				return err
			}
			onSynthetic = syn.CodecRates(result.SideSource, "measured")
		}
		res, err := compress.Measure(ctx, sample, compress.Config{Codecs: codecs, Duration: planCodecTime})
		if res != nil {
			s.Codecs = append(s.Codecs, res.CodecRates(result.SideSource, "measured")...)
			s.SourceCores = res.Cores
		}
		return err
	}}
	far := planStep{"compression on the agent (" + strings.Join(codecs, ", ") + ", synthetic pages)", func(ctx context.Context) error {
		if !sess.Runs(wire.KindCPU) {
			return fmt.Errorf("the agent (narrows %s) does not measure compression: upgrade it", sess.Software)
		}
		spec := wire.TestSpec{Kind: wire.KindCPU, Duration: planCodecTime, Interval: time.Second,
			CPU: &wire.CPUSpec{Codecs: codecs, SampleBytes: planSampleBytes, Seed: planSampleSeed}}
		done, err := sess.RunFar(ctx, spec, func(*wire.Accepted) error { return nil }, func(result.Interval) {})
		if done != nil && done.Compression != nil {
			far := done.Compression.CodecRates(result.SideTarget, "measured on the agent")
			if onSynthetic != nil {
				far = advisor.ScaleToSample(far, onSynthetic, s.Codecs)
			}
			s.Codecs = append(s.Codecs, far...)
			s.TargetCores = done.Compression.Cores
		}
		if err == nil && done != nil && done.Reason != "" {
			err = errors.New(done.Reason)
		}
		return err
	}}
	return []planStep{local, far}
}
