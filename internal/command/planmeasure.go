package command

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/compress"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// planStep is one measurement of a plan: what it says while it runs, and
// what it does.
type planStep struct {
	what string
	run  func(ctx context.Context) error
}

// BackupMeasure is how plan backup measures its stages through an agent
// (`narrows serve` on the backup host) and here.
type BackupMeasure struct {
	Agent client.Options
	// To is the agent as the person named it, the report's target;
	// Agent.Addr when empty.
	To string
	// DataPath is the directory of the database's files here, read by a
	// backup and written by a restore; BackupPath the directory on the
	// agent the backup lands in (inside its --disk-path). Either may be
	// empty: that stage is then not measured.
	DataPath, BackupPath string
	Stage                time.Duration // how long each stage is measured
	DiskSize             int64         // the test file on each side (at least disk.MinSize)
	// Sample is a directory here to measure compression on (read only, a
	// bounded amount spread over its files); "": synthetic database pages.
	Sample string
	// Streams are the parallel streams measured besides one; 0: the
	// plan's Files, at least 4.
	Streams int
	// Codecs are the codecs measured on both hosts (compress's names);
	// none: no compression is measured.
	Codecs []string
}

// DefaultBackupMeasure is plan backup's measurement through the agent at
// agent with the flags' defaults: 5 s a stage, a 1 GiB test file, the
// backup tools' default codecs (lz4, zstd-3, gzip-6).
func DefaultBackupMeasure(agent client.Options) BackupMeasure {
	return BackupMeasure{Agent: agent, Stage: 5 * time.Second, DiskSize: 1 << 30,
		Codecs: []string{compress.LZ4, compress.Zstd3, compress.Gzip6}}
}

// run measures every stage the measurement makes possible on this host
// and through the agent, giving note which step of how many runs. A step
// that fails is named and leaves its stage unmeasured; the plan then says
// so rather than guessing.
func (m BackupMeasure) run(ctx context.Context, files int, note func(string), s *result.BackupStages) (agentSoftware string, unauth bool, err error) {
	if m.DataPath != "" {
		// Read by a backup, written by a restore: the test file goes there.
		if err := probe.CheckDir("--data-path", m.DataPath, true); err != nil {
			return "", false, err
		}
	}
	sess, err := Connect(ctx, m.Agent)
	if err != nil {
		return "", false, err
	}
	defer sess.Close()
	streams := m.Streams
	if streams == 0 {
		streams = max(files, 4)
	}
	if most := sess.Limits.MaxDataConns; most > 0 && streams > most {
		streams = most
	}
	dur, size := m.Stage, m.DiskSize
	s.SourceCores = runtime.NumCPU()
	var steps []planStep
	if m.DataPath != "" {
		steps = append(steps, planStep{"the data path, sequential read and write (" + m.DataPath + ")", func(ctx context.Context) error {
			d, err := localBackupDisk(ctx, m.DataPath, size, dur)
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
	if m.BackupPath != "" {
		steps = append(steps, planStep{"the backup path on the agent, sequential write and read (" + m.BackupPath + ")", func(ctx context.Context) error {
			d, err := farBackupDisk(ctx, sess, m.BackupPath, size, dur)
			s.TargetWrite, s.TargetRead = nil, nil
			if d != nil {
				r, w := advisor.DiskStages(d, "measured on the agent")
				s.TargetRead, s.TargetWrite = r, w
			}
			return err
		}})
	}
	if len(m.Codecs) > 0 {
		steps = append(steps, m.compressionSteps(sess, s)...)
	}
	for i, st := range steps {
		note(fmt.Sprintf("narrows plan backup: step %d of %d: %s", i+1, len(steps), st.what))
		if err := st.run(ctx); err != nil {
			if ctx.Err() != nil {
				return sess.Software, !sess.Authenticated, ErrInterrupted
			}
			var r *client.Refusal
			if errors.As(err, &r) {
				return sess.Software, !sess.Authenticated, fmt.Errorf("plan backup: %s: %w", st.what, err)
			}
			if errors.Is(err, client.ErrMisbehaved) {
				// Nothing it said is a figure to plan on.
				return sess.Software, !sess.Authenticated, fmt.Errorf("plan backup: %s: %w", st.what, err)
			}
			note(fmt.Sprintf("narrows plan backup: %s was not measured: %v", st.what, err))
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
// `narrows disk --to AGENT --profile backup` does.
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

// compressionSteps measure the codecs here (on Sample, else the
// synthetic corpus) and on the agent (on the synthetic corpus, the same
// bytes: the sample stays on this host).
func (m BackupMeasure) compressionSteps(sess *client.Session, s *result.BackupStages) []planStep {
	codecs := m.Codecs
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
		if m.Sample != "" {
			if sample, err = compress.ReadSample(ctx, compress.SampleConfig{Path: m.Sample, Bytes: planSampleBytes}); err != nil {
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
