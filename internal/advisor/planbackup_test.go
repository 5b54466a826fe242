package advisor

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

const (
	mB = 1e6
	gB = 1e9
	tB = 1e12
)

func measured(bps float64) *result.Rate { return &result.Rate{BytesPerSecond: bps, Source: "measured"} }

// fast is a stage no field case is limited by.
var fast = measured(10 * gB)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4g, want %.4g ± %.2g", what, got, want, tol)
	}
}

// TestPlanBackupFieldFigures holds the model to the figures DBAs have
// timed by hand.
func TestPlanBackupFieldFigures(t *testing.T) {
	t.Run("report 000: 117 MB/s of network, faster disks", func(t *testing.T) {
		// 1 Gbit/s carries ~117 MB/s: 10 GB takes ~85 s and 10 TB almost 24 hours.
		p, err := PlanBackup(BackupInput{
			Stages: result.BackupStages{SourceRead: fast, SourceWrite: fast, TargetWrite: fast, TargetRead: fast,
				NetworkOut: []result.StreamRate{{Streams: 1, Rate: *measured(117 * mB)}},
				NetworkIn:  []result.StreamRate{{Streams: 1, Rate: *measured(117 * mB)}}},
			Sizes: []int64{10 * gB, 10 * tB}, Compressions: []string{result.CompressionNone}})
		if err != nil {
			t.Fatal(err)
		}
		near(t, "10 GB backup seconds", p.Cells[0].BackupSeconds, 85.5, 0.5)
		near(t, "10 TB backup hours", p.Cells[1].BackupSeconds/3600, 23.7, 0.05)
		near(t, "10 TB restore hours", p.Cells[1].RestoreSeconds/3600, 23.7, 0.05)
		for _, c := range p.Cells {
			if c.BackupBottleneck != result.StageNetwork || c.RestoreBottleneck != result.StageNetwork {
				t.Errorf("%d bytes: limited by %s / %s, want the network both ways", c.SizeBytes, c.BackupBottleneck, c.RestoreBottleneck)
			}
		}
	})
	t.Run("sp_BlitzBackups: 666,000 MB restored at 100 MB/s", func(t *testing.T) {
		// Its documented example: 600,000 MB full + 60,000 MB differential
		// + 6,000 MB of log, restored at 100 MB/s, is 111 minutes.
		p, err := PlanBackup(BackupInput{
			Stages: result.BackupStages{SourceWrite: fast, TargetRead: measured(100 * mB),
				NetworkIn: []result.StreamRate{{Streams: 1, Rate: *fast}}},
			Sizes: []int64{600_000*mB + 60_000*mB + 6_000*mB}, Compressions: []string{result.CompressionNone}, Engine: result.EngineSQLServer, IFI: true})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Cells[0]
		near(t, "restore minutes", c.RestoreSeconds/60, 111, 0.01)
		if c.RestoreBottleneck != result.StageTargetDisk || c.BackupBottleneck != result.StageUnmeasured {
			t.Errorf("limited by %s (restore) and %s (backup), want the backup host's disk and nothing measured", c.RestoreBottleneck, c.BackupBottleneck)
		}
	})
}

func TestPlanBackupStages(t *testing.T) {
	net117 := []result.StreamRate{{Streams: 1, Rate: *measured(117 * mB)}}
	zstd := func(side string) result.CodecRate {
		return result.CodecRate{Codec: "zstd-3", Side: side, CompressPerCore: 400 * mB, DecompressPerCore: 1200 * mB, Ratio: 3, Source: "measured"}
	}
	gzip := func(side string) result.CodecRate {
		return result.CodecRate{Codec: "gzip-6", Side: side, CompressPerCore: 50 * mB, DecompressPerCore: 300 * mB, Ratio: 3.5, Source: "measured"}
	}
	all := result.BackupStages{SourceRead: measured(2 * gB), SourceWrite: measured(1 * gB), TargetWrite: measured(800 * mB), TargetRead: measured(1 * gB),
		NetworkOut: net117, NetworkIn: net117, SourceCores: 8, TargetCores: 4,
		Codecs: []result.CodecRate{zstd(result.SideSource), zstd(result.SideTarget), gzip(result.SideSource), gzip(result.SideTarget)}}
	cases := []struct {
		name               string
		in                 BackupInput
		backupRate         float64
		backupBy           string
		restoreRate        float64
		restoreBy          string
		zeroing, restoreTo float64 // seconds, when checked
	}{
		{"no compression: the network both ways", BackupInput{Compressions: []string{"none"}},
			117 * mB, result.StageNetwork, 117 * mB, result.StageNetwork, 0, 0},
		// The wire carries a third: 351 MB/s of database, under one core's 400.
		{"zstd on the database host: three times the network", BackupInput{Compressions: []string{"zstd"}},
			351 * mB, result.StageNetwork, 351 * mB, result.StageNetwork, 0, 0},
		// One core of gzip takes 50 MB/s: compression helps only while the CPU keeps up.
		{"gzip on one thread: the CPU", BackupInput{Compressions: []string{"gzip"}, CompressAt: result.CompressAtSource},
			50 * mB, result.StageCompress, 300 * mB, result.StageDecompress, 0, 0},
		// pg_basebackup compresses where it runs: the wire carries it all;
		// then it syncs the last 30 s of what it wrote (117/3 MB/s of
		// zstd) at the backup path's 800 MB/s.
		{"pg_basebackup compressing on the backup host", BackupInput{Compressions: []string{"zstd"}, Engine: result.EnginePGBaseBackup},
			100 * gB / (100*gB/(117*mB) + 117*mB/3*30/(800*mB)), result.StageNetwork, 351 * mB, result.StageNetwork, 0, 0},
		// 8 processes of gzip: 400 MB/s of CPU; the network carries 3.5 × 117.
		{"pgBackRest, 8 processes of gzip", BackupInput{Compressions: []string{"gzip"}, Engine: result.EnginePGBackRest, Files: 8},
			400 * mB, result.StageCompress, 409.5 * mB, result.StageNetwork, 0, 0},
		// Without IFI the data files are zeroed at 1 GB/s first: 100 s of 100 GB.
		{"SQL Server without IFI", BackupInput{Compressions: []string{"none"}, Engine: result.EngineSQLServer},
			117 * mB, result.StageNetwork, 0, result.StageNetwork, 100, 100*gB/(117*mB) + 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Stages, c.in.Sizes = all, []int64{100 * gB}
			p, err := PlanBackup(c.in)
			if err != nil {
				t.Fatal(err)
			}
			cell := p.Cells[0]
			near(t, "backup rate", cell.BackupRate, c.backupRate, 1)
			if cell.BackupBottleneck != c.backupBy || cell.RestoreBottleneck != c.restoreBy {
				t.Errorf("limited by %s / %s, want %s / %s", cell.BackupBottleneck, cell.RestoreBottleneck, c.backupBy, c.restoreBy)
			}
			if c.restoreRate > 0 {
				near(t, "restore rate", cell.RestoreRate, c.restoreRate, 1)
			}
			if c.restoreTo > 0 {
				near(t, "zeroing seconds", cell.ZeroingSeconds, c.zeroing, 0.01)
				near(t, "restore seconds", cell.RestoreSeconds, c.restoreTo, 0.01)
			}
			near(t, "backup seconds", cell.BackupSeconds, 100*gB/cell.BackupRate, 1e-6)
		})
	}
}

// TestPlanBackupIssue25: what issue 25 §2.10 found against a real
// pg_basebackup: stages too close to tell apart named as one, the final
// sync left out, and a server-side codec planned from its own rate.
func TestPlanBackupIssue25(t *testing.T) {
	net := []result.StreamRate{{Streams: 1, Rate: *measured(25 * mB)}}
	stages := func(gzipRate float64) result.BackupStages {
		return result.BackupStages{SourceRead: measured(500 * mB), SourceWrite: measured(500 * mB), TargetWrite: measured(400 * mB), TargetRead: measured(500 * mB),
			NetworkOut: net, NetworkIn: net, SourceCores: 2, TargetCores: 2,
			Codecs: []result.CodecRate{
				{Codec: "gzip-6", Side: result.SideSource, CompressPerCore: gzipRate, DecompressPerCore: 300 * mB, Ratio: 10, Source: "measured"},
				{Codec: "gzip-6", Side: result.SideTarget, CompressPerCore: gzipRate, DecompressPerCore: 300 * mB, Ratio: 10, Source: "measured"}}}
	}
	plan := func(t *testing.T, in BackupInput) result.BackupCell {
		t.Helper()
		in.Sizes, in.Engine = []int64{667 * mB}, result.EnginePGBaseBackup
		p, err := PlanBackup(in)
		if err != nil {
			t.Fatal(err)
		}
		return p.Cells[0]
	}
	for _, c := range []struct {
		name     string
		gzip     float64
		by, also string
	}{
		{"gzip 10% faster than the line: both named", 27.5 * mB, result.StageNetwork, result.StageCompress},
		{"gzip 20% slower than the line: both named", 20 * mB, result.StageCompress, result.StageNetwork},
		{"gzip twice as fast: the line alone", 50 * mB, result.StageNetwork, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cell := plan(t, BackupInput{Stages: stages(c.gzip), Compressions: []string{"gzip"}})
			if cell.BackupBottleneck != c.by || strings.Join(cell.BackupAlso, ",") != c.also {
				t.Errorf("limited by %s, also %q; want %s, also %q", cell.BackupBottleneck, cell.BackupAlso, c.by, c.also)
			}
			f := backupPlan(&result.BackupPlan{Cells: []result.BackupCell{cell}})
			if c.also != "" && !strings.Contains(f[0].Summary, " or ") {
				t.Errorf("two stages within the margin, the finding names one: %s", f[0].Summary)
			}
		})
	}
	t.Run("a busy backup host: compression at the share of a core its thread got", func(t *testing.T) {
		st := stages(100 * mB)
		for i := range st.Codecs {
			st.Codecs[i].CompressShare = 0.3
		}
		p, err := PlanBackup(BackupInput{Stages: st, Compressions: []string{"gzip"}, Sizes: []int64{667 * mB}, Engine: result.EnginePGBaseBackup})
		if err != nil {
			t.Fatal(err)
		}
		cell := p.Cells[0]
		// 30 MB/s of gzip against 25 MB/s of line: either.
		if cell.BackupBottleneck != result.StageNetwork || strings.Join(cell.BackupAlso, ",") != result.StageCompress {
			t.Errorf("limited by %s, also %q; want the network or compression", cell.BackupBottleneck, cell.BackupAlso)
		}
		if !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "got 30% of a core") }) {
			t.Errorf("the busy host is not noted: %q", p.Notes)
		}
	})
	t.Run("the final sync: all of a backup shorter than 30 s", func(t *testing.T) {
		cell := plan(t, BackupInput{Stages: stages(50 * mB), Compressions: []string{"none"}})
		near(t, "sync seconds", cell.SyncSeconds, 667*mB/(400*mB), 1e-6)
		near(t, "backup seconds", cell.BackupSeconds, 667*mB/(25*mB)+667*mB/(400*mB), 1e-6)
		in := BackupInput{Stages: stages(50 * mB), Compressions: []string{"none"}, Engine: result.EngineGeneric, Sizes: []int64{667 * mB}}
		if p, _ := PlanBackup(in); p.Cells[0].SyncSeconds != 0 {
			t.Errorf("a generic backup is not pg_basebackup: synced %v s", p.Cells[0].SyncSeconds)
		}
	})
	t.Run("server-side compression: cannot judge, the least it takes", func(t *testing.T) {
		st := stages(50 * mB)
		for i := range st.Codecs {
			st.Codecs[i].CompressShare = 0.3 // a busy host: the least time is still a core's
		}
		cell := plan(t, BackupInput{Stages: st, Compressions: []string{"gzip-6"}, CompressAt: result.CompressAtSource})
		if cell.BackupBottleneck != result.StageCannotJudge || !strings.Contains(cell.CannotJudge, "pg_basebackup --compress=server-gzip:6") {
			t.Errorf("limited by %s (%q)", cell.BackupBottleneck, cell.CannotJudge)
		}
		if least := 667 * mB / (50 * mB); cell.BackupSeconds < least || cell.BackupSeconds > least+cell.SyncSeconds+1e-9 {
			t.Errorf("at least %.1f s, but the codec alone on a core takes %.1f s", cell.BackupSeconds, least)
		}
		f := backupPlan(&result.BackupPlan{Cells: []result.BackupCell{cell}})
		if last := f[len(f)-1]; last.Code != "plan.backup_cannot_judge" || !strings.Contains(last.Summary, "--compress=server-gzip:6") {
			t.Errorf("no plan.backup_cannot_judge with what to run: %+v", last)
		}
		backup, _, _ := strings.Cut(f[0].Summary, "; restore")
		if !strings.Contains(backup, "at least") || !strings.Contains(backup, "cannot judge") || strings.Contains(backup, "limited by") {
			t.Errorf("the finding: %s", f[0].Summary)
		}
	})
}

// TestPlanBackupStreams: the network figure follows the files, the
// what-if says what more files would give, and the RTO is judged.
func TestPlanBackupStreams(t *testing.T) {
	s := result.BackupStages{SourceRead: fast, SourceWrite: fast, TargetWrite: fast, TargetRead: fast,
		NetworkOut: []result.StreamRate{{Streams: 1, Rate: *measured(300 * mB)}, {Streams: 4, Rate: *measured(500 * mB)}},
		NetworkIn:  []result.StreamRate{{Streams: 1, Rate: *measured(280 * mB)}, {Streams: 4, Rate: *measured(450 * mB)}}}
	for _, c := range []struct {
		files int
		want  float64
		note  string
	}{{1, 300 * mB, ""}, {4, 500 * mB, ""}, {8, 500 * mB, "measured with 4 streams, not 8"}, {2, 300 * mB, "measured with 1 stream, not 2"}} {
		p, err := PlanBackup(BackupInput{Stages: s, Sizes: []int64{1 * tB}, Compressions: []string{"none"}, Files: c.files, RTO: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		near(t, "backup rate", p.Cells[0].BackupRate, c.want, 1)
		if c.note != "" && !strings.Contains(strings.Join(p.Notes, " "), c.note) {
			t.Errorf("%d files: notes %q lack %q", c.files, p.Notes, c.note)
		}
		// 1 TB at 280–450 MB/s is 37–60 min: within the hour.
		if m := p.Cells[0].RTOMet; m == nil || !*m {
			t.Errorf("%d files: restore %.0f s against an RTO of 1 h: %v", c.files, p.Cells[0].RestoreSeconds, m)
		}
	}
	p, _ := PlanBackup(BackupInput{Stages: s, Sizes: []int64{10 * tB}, Compressions: []string{"none"}, Files: 1, RTO: 4 * time.Hour})
	f := backupPlan(&p)
	codes := map[string]string{}
	for _, x := range f {
		codes[x.Code] = x.Summary
	}
	if !strings.Contains(codes["plan.rto_missed"], "past the RTO of 4.0 h") {
		t.Errorf("10 TB at 280 MB/s against 4 h: %q", codes["plan.rto_missed"])
	}
	if want := "With 4 files: backup 5.6 h (limited by the network), restore 6.2 h"; !strings.HasPrefix(codes["plan.more_files"], want) {
		t.Errorf("what-if %q, want it to start %q", codes["plan.more_files"], want)
	}
}

func TestPlanBackupRefuses(t *testing.T) {
	s := result.BackupStages{SourceRead: fast, NetworkOut: []result.StreamRate{{Streams: 1, Rate: *fast}}}
	for _, c := range []struct {
		name string
		in   BackupInput
		want string
	}{
		{"a codec with no figures", BackupInput{Stages: s, Compressions: []string{"lz4"}, Sizes: []int64{gB}}, "compression lz4: no figures for it on the database host side"},
		{"nothing measured", BackupInput{Compressions: []string{"none"}, Sizes: []int64{gB}}, "no stage of the backup was measured"},
		{"an unknown engine", BackupInput{Stages: s, Engine: "tape", Compressions: []string{"none"}, Sizes: []int64{gB}}, `unknown backup engine "tape"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := PlanBackup(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}

// TestStagesFromRuns: a disk run's sequential patterns and a stream run's
// directions become the plan's stages; stopped or flushed patterns do not.
func TestStagesFromRuns(t *testing.T) {
	d := &result.Disk{Path: "/data", Patterns: []result.DiskPattern{
		{Name: "read 1 MiB QD8", RW: "read", Sync: result.SyncNone, Throughput: 900 * mB},
		{Name: "write 1 MiB QD8", RW: "write", Sync: result.SyncNone, Throughput: 700 * mB},
		{Name: "write 16 KiB + fdatasync", RW: "write", Sync: result.SyncFdatasync, Throughput: 30 * mB},
		{Name: "read 1 MiB QD1", RW: "read", Sync: result.SyncNone, Throughput: 2 * gB, Stopped: "interrupted"},
	}}
	r, w := DiskStages(d, "measured")
	if r == nil || w == nil || r.BytesPerSecond != 900*mB || w.BytesPerSecond != 700*mB || r.What != "read 1 MiB QD8, /data" {
		t.Fatalf("read %+v, write %+v", r, w)
	}
	s := &result.Stream{Runs: []result.StreamRun{
		{Direction: "forward", Streams: 1, Throughput: 936e6}, {Direction: "forward", Streams: 4, Throughput: 3e9},
		{Direction: "reverse", Streams: 1, Throughput: 920e6},
	}}
	out, in := NetworkStages(s, "measured")
	if len(out) != 2 || len(in) != 1 || out[0].BytesPerSecond != 117*mB || out[1].Streams != 4 || in[0].BytesPerSecond != 115*mB {
		t.Fatalf("out %+v, in %+v", out, in)
	}
}

// TestScaleToSample: the agent's figures on the synthetic pages move to
// the sample as this host's did; the ratio is the sample's.
func TestScaleToSample(t *testing.T) {
	far := []result.CodecRate{{Codec: "gzip-6", Side: result.SideTarget, CompressPerCore: 20 * mB, DecompressPerCore: 200 * mB, Ratio: 3}}
	here := []result.CodecRate{{Codec: "gzip-6", Side: result.SideSource, CompressPerCore: 25 * mB, DecompressPerCore: 250 * mB, Ratio: 3}}
	sample := []result.CodecRate{{Codec: "gzip-6", Side: result.SideSource, CompressPerCore: 75 * mB, DecompressPerCore: 1000 * mB, Ratio: 19, Sample: "/data"}}
	got := ScaleToSample(far, here, sample)[0]
	if got.CompressPerCore != 60*mB || got.DecompressPerCore != 800*mB || got.Ratio != 19 || got.Side != result.SideTarget {
		t.Fatalf("%+v", got)
	}
}
