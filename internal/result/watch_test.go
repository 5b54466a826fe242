package result

import (
	"math"
	"testing"
	"time"
)

// histogramQuantile is Prometheus's histogram_quantile on classic buckets:
// the bucket that holds the rank, and a straight line inside it.
func histogramQuantile(q float64, bounds []time.Duration, cumulative []uint64) float64 {
	total := float64(cumulative[len(cumulative)-1])
	rank := q * total
	for i, c := range cumulative {
		if float64(c) >= rank {
			lo, below := 0.0, 0.0
			if i > 0 {
				lo, below = bounds[i-1].Seconds(), float64(cumulative[i-1])
			}
			return lo + (bounds[i].Seconds()-lo)*(rank-below)/(float64(c)-below)
		}
	}
	return math.NaN()
}

// TestWatchBucketsResolve: the median histogram_quantile reads from the
// watch's buckets is within a bucket's ratio of the round trips' median,
// wherever they lie from 100 µs to 5 s (issue 25, defect 12: 1-2-5 bounds
// read 7.87 ms on a path whose fastest round trip took 8.07 ms).
func TestWatchBucketsResolve(t *testing.T) {
	b := WatchBuckets
	if b[0] != 50*time.Microsecond || b[len(b)-1] != 10*time.Second {
		t.Fatalf("bounds from %s to %s, want 50µs to 10s", b[0], b[len(b)-1])
	}
	for i := 1; i < len(b); i++ {
		if r := float64(b[i]) / float64(b[i-1]); r <= 1 || r > WatchBucketRatio*1.01 {
			t.Fatalf("bounds %s and %s are %.3f× apart, want above 1 and at most %.3f×", b[i-1], b[i], r, WatchBucketRatio)
		}
	}
	t.Logf("%d bounds, %.1f%% apart", len(b), 100*(WatchBucketRatio-1))
	worst := 0.0
	for min := 100 * time.Microsecond; min < 5*time.Second; min = min * 103 / 100 {
		// 1,000 round trips spread evenly from min to 5% above it.
		cum := make([]uint64, len(b))
		var rtts []time.Duration
		for k := range 1000 {
			d := min + time.Duration(float64(min)*0.05*float64(k)/999)
			rtts = append(rtts, d)
			for j := range b {
				if d <= b[j] {
					cum[j]++
				}
			}
		}
		median := (rtts[499] + rtts[500]).Seconds() / 2
		got := histogramQuantile(0.5, b, cum)
		err := math.Abs(got/median - 1)
		worst = max(worst, err)
		if err > WatchBucketRatio-1 {
			t.Errorf("round trips %s to %s: histogram_quantile(0.5) reads %.4g s against a median of %.4g s (%.1f%% off)",
				min, min*105/100, got, median, 100*err)
		}
	}
	t.Logf("worst median error from 100 µs to 5 s: %.1f%%", 100*worst)
}
