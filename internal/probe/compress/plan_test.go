package compress

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/result"
)

// The figures go into the backup plan as they are: a measured codec is a
// compression the plan can answer for, on the side it was measured.
func TestMeasuredCodecsFeedThePlan(t *testing.T) {
	s, err := Synthetic(1<<20, DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Measure(context.Background(), s, Config{Codecs: []string{Zstd3, LZ4}, Duration: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fast := &result.Rate{BytesPerSecond: 1e12, Source: "measured"}
	stages := result.BackupStages{SourceRead: fast, SourceWrite: fast, TargetWrite: fast, TargetRead: fast,
		NetworkOut: []result.StreamRate{{Streams: 1, Rate: *fast}}, NetworkIn: []result.StreamRate{{Streams: 1, Rate: *fast}},
		Codecs: res.CodecRates(result.SideSource, ""), SourceCores: 1}
	p, err := advisor.PlanBackup(advisor.BackupInput{Stages: stages, Sizes: []int64{1e12}, Compressions: []string{"zstd", LZ4},
		Engine: result.EnginePGBackRest})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range p.Cells {
		m := res.Codecs[i]
		// Every other stage is a terabyte a second: one core compressing
		// is the limit, and the backup holds the size over the ratio.
		if c.BackupBottleneck != result.StageCompress || c.RestoreBottleneck != result.StageDecompress {
			t.Errorf("%s: limited by %s / %s", c.Compression, c.BackupBottleneck, c.RestoreBottleneck)
		}
		if want := math.Round(1e12 / m.Ratio); math.Abs(float64(c.BackupBytes)-want) > 1 {
			t.Errorf("%s: the backup holds %d bytes, want %.0f", c.Compression, c.BackupBytes, want)
		}
		// At the rate the measuring thread got: its per-core figure over
		// CPU time, times the share of a core it had (a busy host gives a
		// backup's one thread no more).
		share := func(pct float64) float64 {
			if pct <= 0 || pct >= 100 {
				return 1
			}
			return max(pct/100, 0.1)
		}
		wantB, wantR := m.Compress.PerCore*share(m.Compress.CPUPercent), m.Decompress.PerCore*share(m.Decompress.CPUPercent)
		if math.Abs(c.BackupRate-wantB) > 1e-6*wantB || math.Abs(c.RestoreRate-wantR) > 1e-6*wantR {
			t.Errorf("%s: backup at %.0f B/s, restore at %.0f; measured %.0f and %.0f per core at %.0f%% and %.0f%% of a core", c.Compression,
				c.BackupRate, c.RestoreRate, m.Compress.PerCore, m.Decompress.PerCore, m.Compress.CPUPercent, m.Decompress.CPUPercent)
		}
	}
	// Measured on the database host only: compressing on the backup host
	// is a question the figures cannot answer, and the plan says so.
	if _, err := advisor.PlanBackup(advisor.BackupInput{Stages: stages, Sizes: []int64{1e12}, Compressions: []string{LZ4},
		Engine: result.EnginePGBaseBackup}); err == nil {
		t.Error("pg_basebackup compresses on the backup host; figures from the database host alone were accepted")
	}
}
