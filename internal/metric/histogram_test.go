package metric

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBucketsRoundTrip(t *testing.T) {
	// Every value must land in a bucket whose bounds contain it, and the
	// bucket must be no wider than 0.1% of the value.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		v := rng.Int64N(int64(MaxValue))
		if rng.IntN(2) == 0 {
			v = rng.Int64N(100000)
		}
		lo, hi := bounds(index(v))
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket [%d,%d]", v, lo, hi)
		}
		if float64(hi-lo) > float64(v)/1000 {
			t.Fatalf("bucket [%d,%d] wider than 0.1%% of %d", lo, hi, v)
		}
	}
	if index(int64(MaxValue)) != bucketCnt-1 {
		t.Fatalf("max value index %d, want %d", index(int64(MaxValue)), bucketCnt-1)
	}
}

func TestHistogramQuantilesAgainstSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	h := NewHistogram()
	var vals []int64
	for range 100000 {
		// A long-tailed latency: mostly ~40 µs, some ms-scale outliers.
		v := 30000 + rng.Int64N(20000)
		if rng.IntN(100) == 0 {
			v = 1_000_000 + rng.Int64N(50_000_000)
		}
		vals = append(vals, v)
		h.Record(time.Duration(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		rank := int(q*float64(len(vals))+0.999999) - 1
		exact := vals[rank]
		got := int64(h.Quantile(q))
		if got < exact || float64(got-exact) > float64(exact)/1000+1 {
			t.Errorf("q%.3f = %d, exact %d (must be within 0.1%% above)", q, got, exact)
		}
	}
	if h.Max() != time.Duration(vals[len(vals)-1]) || h.Min() != time.Duration(vals[0]) {
		t.Errorf("min/max %v/%v, want %d/%d", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
	}
	var sum int64
	for _, v := range vals {
		sum += v
	}
	if want := time.Duration(sum / int64(len(vals))); h.Mean()-want > 1 || want-h.Mean() > 1 {
		t.Errorf("mean %v, want %v", h.Mean(), want)
	}
}

func TestHistogramMergeResetEmpty(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	if a.Quantile(0.5) != 0 || a.Mean() != 0 || a.Min() != 0 {
		t.Fatal("empty histogram must report zeros")
	}
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Microsecond)
		b.Record(time.Duration(i+100) * time.Microsecond)
	}
	a.Merge(b)
	if a.Count() != 200 || a.Max() != 200*time.Microsecond || a.Min() != time.Microsecond {
		t.Fatalf("merged count %d min %v max %v", a.Count(), a.Min(), a.Max())
	}
	if p50 := a.Quantile(0.5); p50 < 100*time.Microsecond || p50 > 100100*time.Nanosecond {
		t.Fatalf("merged p50 %v, want ~100µs", p50)
	}
	a.Record(-5)
	a.Record(MaxValue * 2)
	if a.Max() != MaxValue || a.Min() != 0 {
		t.Fatalf("clamping: min %v max %v", a.Min(), a.Max())
	}
	a.Reset()
	if a.Count() != 0 || a.Quantile(0.99) != 0 {
		t.Fatal("reset histogram not empty")
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	for i := range b.N {
		h.Record(time.Duration(20000 + i%50000))
	}
}

// TestHistogramPagesOnDemand: a histogram holds only the pages its values
// landed in (a link's round trips span a few powers of two), so a fleet's
// many histograms cost what they hold; Reset keeps them, Merge adds the
// other's, and the figures are those of the flat layout.
func TestHistogramPagesOnDemand(t *testing.T) {
	pages := func(h *Histogram) (n int) {
		for _, p := range h.pages {
			if p != nil {
				n++
			}
		}
		return n
	}
	h := NewHistogram()
	if n := pages(h); n != 0 {
		t.Fatalf("an empty histogram holds %d pages", n)
	}
	// 40 µs to 1 ms: powers of two 2^15 to 2^19 ns, five pages.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		h.Record(time.Duration(40_000 + rng.Int64N(960_000)))
	}
	if n := pages(h); n != 5 {
		t.Fatalf("values from 40µs to 1ms hold %d pages, want 5", n)
	}
	if q := h.Quantile(0.5); q < 400*time.Microsecond || q > 640*time.Microsecond {
		t.Errorf("median %v of uniform 40µs-1ms", q)
	}
	h.Reset()
	if n := pages(h); n != 5 || h.Count() != 0 || h.Quantile(0.99) != 0 {
		t.Fatalf("after Reset: %d pages, count %d", n, h.Count())
	}
	other := NewHistogram()
	other.Record(time.Second)
	h.Merge(other)
	if n := pages(h); n != 6 || h.Max() != time.Second || h.Quantile(1) != time.Second {
		t.Fatalf("after Merge: %d pages, max %v", n, h.Max())
	}
}
