package disk

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// TestOffsets: every offset is block-aligned and inside the file (or the
// thread's region), a mix draws its share of reads, and the same seed
// draws the same sequence while another seed does not.
func TestOffsets(t *testing.T) {
	const size = 64 << 20
	cases := []struct {
		name string
		p    Pattern
	}{
		{"randread 8K", Pattern{RW: RandRead, Block: 8 << 10, QD: 32, Threads: 1}},
		{"randwrite 4K", Pattern{RW: RandWrite, Block: 4 << 10, QD: 1, Threads: 1}},
		{"mix 70/30 8K", Pattern{RW: Mix, ReadPercent: 70, Block: 8 << 10, QD: 8, Threads: 1}},
		{"mix 5/95 16K", Pattern{RW: Mix, ReadPercent: 5, Block: 16 << 10, QD: 8, Threads: 1}},
		{"seq read 1M", Pattern{RW: Read, Block: 1 << 20, QD: 8, Threads: 1}},
		{"seq write 60K x3 threads", Pattern{RW: Write, Block: 60 << 10, QD: 1, Threads: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const draws = 200000
			regions := make([][2]int64, c.p.Threads)
			for th := range c.p.Threads {
				o := newOffsets(c.p, size, 42, 3, th)
				lo, hi := int64(math.MaxInt64), int64(-1)
				reads := 0
				prev := int64(-1)
				for i := range draws {
					off, read := o.next()
					if off%c.p.Block != 0 || off%DirectAlign != 0 {
						t.Fatalf("offset %d not aligned to %d", off, c.p.Block)
					}
					if off < 0 || off+c.p.Block > size {
						t.Fatalf("offset %d outside the %d-byte file", off, size)
					}
					if !c.p.Random() && prev >= 0 && off != prev+c.p.Block && off != o.base {
						t.Fatalf("draw %d: sequential offset %d after %d", i, off, prev)
					}
					prev = off
					lo, hi = min(lo, off), max(hi, off)
					if read {
						reads++
					}
				}
				regions[th] = [2]int64{lo, hi + c.p.Block}
				got, want := 100*float64(reads)/draws, float64(c.p.readPercent())
				if math.Abs(got-want) > 0.5 {
					t.Fatalf("%.2f%% reads, want %v%%", got, want)
				}
				// Random draws cover the file; sequential ones wrap within
				// their region.
				if c.p.Random() && (lo > 8*c.p.Block || hi < size-9*c.p.Block) {
					t.Fatalf("random offsets span only [%d, %d] of %d", lo, hi, size)
				}
			}
			for i := 1; i < len(regions); i++ {
				if regions[i][0] < regions[i-1][1] {
					t.Fatalf("thread regions overlap: %v", regions)
				}
			}
		})
	}
	t.Run("seeded", func(t *testing.T) {
		p := Pattern{RW: Mix, ReadPercent: 70, Block: 8 << 10, QD: 8, Threads: 1}
		seq := func(seed uint64, pattern, thread int) []int64 {
			o := newOffsets(p, size, seed, pattern, thread)
			var s []int64
			for range 1000 {
				off, read := o.next()
				if read {
					off = -off - 1
				}
				s = append(s, off)
			}
			return s
		}
		if !slices.Equal(seq(7, 0, 0), seq(7, 0, 0)) {
			t.Fatal("the same seed drew different offsets")
		}
		for _, other := range [][]int64{seq(8, 0, 0), seq(7, 1, 0), seq(7, 0, 1)} {
			if slices.Equal(seq(7, 0, 0), other) {
				t.Fatal("another seed, pattern or thread drew the same offsets")
			}
		}
	})
}

func TestProfiles(t *testing.T) {
	cases := []struct {
		profile string
		names   []string
	}{
		{result.ProfileData, []string{"randread 8 KiB QD1", "randread 8 KiB QD8", "randread 8 KiB QD32", "mix 70/30 8 KiB QD1", "mix 70/30 8 KiB QD8", "mix 70/30 8 KiB QD32"}},
		// Linux: "+ fdatasync" and "O_DSYNC"; Windows: "+ FlushFileBuffers"
		// and "write-through" (the names say what was done).
		{result.ProfileLog, []string{"write 8 KiB + " + words.flush, "write 8 KiB " + words.dsyncName, "write 16 KiB + " + words.flush,
			"write 16 KiB " + words.dsyncName, "write 60 KiB + " + words.flush, "write 60 KiB " + words.dsyncName}},
		{result.ProfileBackup, []string{"read 1 MiB QD8", "write 1 MiB QD8"}},
	}
	for _, c := range cases {
		t.Run(c.profile, func(t *testing.T) {
			var names []string
			for _, p := range Profiles[c.profile]() {
				if err := p.Check(true); err != nil {
					t.Fatalf("%s: %v", p.Name(), err)
				}
				if p.Profile != c.profile {
					t.Fatalf("%s in profile %q", p.Name(), p.Profile)
				}
				names = append(names, p.Name())
			}
			if !slices.Equal(names, c.names) {
				t.Fatalf("patterns %q, want %q", names, c.names)
			}
		})
	}
}

func TestPatternCheck(t *testing.T) {
	ok := Pattern{RW: RandRead, Block: 8 << 10, QD: 1, Threads: 1, Sync: result.SyncNone}
	cases := []struct {
		name   string
		change func(*Pattern)
		direct bool
		want   string
	}{
		{"fine", func(p *Pattern) {}, true, ""},
		{"unknown rw", func(p *Pattern) { p.RW = "scan" }, true, `--rw "scan"`},
		{"mix over 100", func(p *Pattern) { p.RW, p.ReadPercent = Mix, 101 }, true, "--mix 101"},
		{"tiny block", func(p *Pattern) { p.Block = 100 }, false, "--block 100 B"},
		{"odd block with O_DIRECT", func(p *Pattern) { p.Block = 6000 }, true, "multiple of 4K"},
		{"odd block buffered", func(p *Pattern) { p.Block = 6000 }, false, ""},
		{"huge block", func(p *Pattern) { p.Block = 1 << 30 }, true, "64M"},
		{"qd 0", func(p *Pattern) { p.QD = 0 }, true, "--qd 0"},
		{"too many threads", func(p *Pattern) { p.Threads = 65 }, true, "--threads 65"},
		{"unknown sync", func(p *Pattern) { p.RW, p.Sync = Write, "fsync" }, true, `--sync "fsync"`},
		{"sync on reads", func(p *Pattern) { p.Sync = result.SyncDsync }, true, "a sync mode needs writes"},
		{"fdatasync at qd 8", func(p *Pattern) { p.RW, p.Sync, p.QD = Write, result.SyncFdatasync, 8 }, true, "use --qd 1"},
		{"dsync at qd 8", func(p *Pattern) { p.RW, p.Sync, p.QD = RandWrite, result.SyncDsync, 8 }, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.change(&p)
			err := p.Check(c.direct)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
