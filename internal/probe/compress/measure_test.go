package compress

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
)

// A short run on a small corpus: every codec has both rates, a ratio and
// the bytes it went through; timing bounds are never asserted.
func TestMeasureEveryCodec(t *testing.T) {
	s, err := Synthetic(4<<20, DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Measure(context.Background(), s, Config{Duration: 30 * time.Millisecond, ChunkBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "" || len(res.Codecs) != len(DefaultCodecs) {
		t.Fatalf("stopped %q, %d codecs", res.Stopped, len(res.Codecs))
	}
	if res.Sample.Kind != result.SampleSynthetic || res.Sample.Bytes != 4<<20 || res.Config.Threads != 1 || res.Cores < 1 {
		t.Errorf("sample %+v, config %+v, cores %d", res.Sample, res.Config, res.Cores)
	}
	by := map[string]result.CodecResult{}
	for i, c := range res.Codecs {
		if c.Codec != DefaultCodecs[i] {
			t.Errorf("codec %d is %s, want %s (the order asked)", i, c.Codec, DefaultCodecs[i])
		}
		by[c.Codec] = c
		if c.Ratio <= 1.5 || c.CompressedBytes <= 0 || c.Ratio != float64(4<<20)/float64(c.CompressedBytes) {
			t.Errorf("%s: ratio %.2f of %d compressed bytes", c.Codec, c.Ratio, c.CompressedBytes)
		}
		// At least the whole sample went through the compressor (the first
		// pass is whole), and something through the decompressor.
		if c.Compress.Bytes < 4<<20 || c.Decompress.Bytes <= 0 {
			t.Errorf("%s: %d bytes compressed, %d decompressed", c.Codec, c.Compress.Bytes, c.Decompress.Bytes)
		}
		for dir, p := range map[string]result.CodecPass{"compress": c.Compress, "decompress": c.Decompress} {
			if p.PerCore <= 0 || p.Wall <= 0 {
				t.Errorf("%s %s: %.0f B/s per core over %v", c.Codec, dir, p.PerCore, p.Wall.D())
			}
			if res.CPUTimeUnavailable == "" && (p.CPU <= 0 || p.CPUPercent <= 0) {
				t.Errorf("%s %s: no CPU time (%v, %.0f%%)", c.Codec, dir, p.CPU.D(), p.CPUPercent)
			}
		}
		if c.Parallel != nil {
			t.Errorf("%s: a parallel run was not asked for", c.Codec)
		}
		if c.Implementation == "" || c.Algorithm == "" {
			t.Errorf("%s: implementation %q, algorithm %q", c.Codec, c.Implementation, c.Algorithm)
		}
	}
	// Properties of the algorithms, by margins no machine closes: lz4
	// compresses several times faster than gzip -6 (4–5× here, busy or
	// not, the rate being per CPU second), and compresses less than zstd.
	if l, g := by[LZ4].Compress.PerCore, by[Gzip6].Compress.PerCore; l < 2*g && !raceEnabled {
		t.Errorf("lz4 compresses at %.0f MB/s per core, gzip-6 at %.0f: lz4 should be far faster", l/1e6, g/1e6)
	}
	if by[LZ4].Ratio >= by[Zstd3].Ratio {
		t.Errorf("lz4's ratio %.2f is not below zstd-3's %.2f", by[LZ4].Ratio, by[Zstd3].Ratio)
	}

	// The plan takes the figures as they are, for the side asked.
	rates := res.CodecRates(result.SideTarget, "")
	if len(rates) != len(res.Codecs) {
		t.Fatalf("%d codec rates from %d codecs", len(rates), len(res.Codecs))
	}
	for i, r := range rates {
		c := res.Codecs[i]
		if r.Codec != c.Codec || r.Side != result.SideTarget || r.Source != "measured" || r.Sample != result.SampleSynthetic ||
			r.CompressPerCore != c.Compress.PerCore || r.DecompressPerCore != c.Decompress.PerCore || r.Ratio != c.Ratio {
			t.Errorf("rate %+v from %+v", r, c)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"bytes_per_second_per_core"`, `"cpu_seconds"`, `"wall_seconds"`, `"compressed_bytes"`, `"duration_seconds"`, `"chunk_bytes"`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("the JSON has no %s", name)
		}
	}
}

func TestMeasureParallel(t *testing.T) {
	s, err := Synthetic(1<<20, DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Measure(context.Background(), s, Config{Codecs: []string{LZ4}, Duration: 20 * time.Millisecond, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Codecs[0]
	want := min(2, res.Config.Threads)
	if res.Config.Threads > 1 {
		if c.Parallel == nil || c.Parallel.Threads != want || c.Parallel.Compress <= 0 || c.Parallel.Decompress <= 0 || c.Parallel.Scaling <= 0 {
			t.Fatalf("parallel: %+v", c.Parallel)
		}
	} else if c.Parallel != nil {
		t.Fatalf("GOMAXPROCS is 1, yet a parallel run: %+v", c.Parallel)
	}
}

func TestMeasureSampleReceived(t *testing.T) {
	s, err := Synthetic(256<<10, 2)
	if err != nil {
		t.Fatal(err)
	}
	// The agent has bytes and what the client said of them, nothing else.
	res, err := Measure(context.Background(), Sample{Data: s.Data}, Config{Codecs: []string{"zstd"}, Duration: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Codecs) != 1 || res.Codecs[0].Codec != Zstd3 {
		t.Fatalf("zstd measured as %+v; want zstd-3, the tools' default", res.Codecs)
	}
	if res.Sample.Kind != result.SampleReceived || res.Sample.Bytes != 256<<10 {
		t.Errorf("sample %+v", res.Sample)
	}
	if r := res.CodecRates(result.SideSource, "run.json"); len(r) != 1 || r[0].Sample != result.SampleReceived || r[0].Source != "run.json" {
		t.Errorf("rates %+v", r)
	}
}

func TestMeasureRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Sample
		cfg  Config
		want string
	}{
		{"empty sample", Sample{}, Config{}, "the compression sample is empty"},
		{"too big", Sample{Data: make([]byte, MaxSampleBytes+1)}, Config{}, "more than the most narrows holds"},
		{"unknown codec", Sample{Data: []byte("x")}, Config{Codecs: []string{"xpress"}}, `unknown codec "xpress"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Measure(context.Background(), tc.s, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
}

// Interrupted, a run returns what it measured, marked, and no error.
func TestMeasureInterrupted(t *testing.T) {
	s, err := Synthetic(1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Measure(ctx, s, Config{Duration: time.Second})
	if err != nil || res == nil || res.Stopped != probe.Interrupted {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if len(res.CodecRates(result.SideSource, "")) != 0 {
		t.Error("a run stopped before any codec finished gave the plan figures")
	}

	// Stopped later (how much later depends on the machine): the run ends
	// with the codec it was in, which keeps what it measured.
	small, err := Synthetic(256<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err = Measure(ctx, small, Config{Codecs: []string{LZ4, Gzip6}, Duration: time.Minute})
	if err != nil || res.Stopped != probe.Interrupted || len(res.Codecs) != 1 {
		t.Fatalf("stopped %q, %d codecs, err %v", res.Stopped, len(res.Codecs), err)
	}
	c := res.Codecs[0]
	if c.Stopped != probe.Interrupted {
		t.Errorf("the codec was not marked: %+v", c)
	}
	switch {
	case c.Ratio == 0:
		t.Logf("interrupted in the first pass (a slow machine): nothing kept")
		if c.Compress.Bytes != 0 {
			t.Errorf("a cut first pass reported %d bytes", c.Compress.Bytes)
		}
	case c.Compress.Bytes < int64(len(small.Data)) || c.CompressedBytes <= 0 || c.Compress.PerCore <= 0:
		t.Errorf("kept figures: %+v", c)
	}
}
