package metric

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSparseMergedIsPooled: three hosts' latencies, each a Sparse as an
// agent sends it, merged: the merged quantiles are the quantiles of all
// the samples pooled, within the coarsening's precision (and never
// below them: a coarse bucket counts as its highest).
func TestSparseMergedIsPooled(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var pooled []time.Duration
	merged := NewHistogram()
	coarsest := 0
	for host, scale := range []float64{80e3, 90e3, 400e3} { // one slow host
		h := NewHistogram()
		for range 20000 {
			v := time.Duration(scale * (0.5 + r.ExpFloat64()))
			h.Record(v)
			pooled = append(pooled, v)
		}
		s := h.Sparse()
		if len(s.Buckets) > MaxSparse {
			t.Fatalf("host %d: %d buckets", host, len(s.Buckets))
		}
		back, err := FromSparse(s)
		if err != nil {
			t.Fatalf("host %d: %v", host, err)
		}
		t.Logf("host %d: %d buckets, shift %d (%.1f%%)", host, len(s.Buckets), s.Shift, 100*Precision(s.Shift))
		coarsest = max(coarsest, s.Shift)
		merged.Merge(back)
	}
	slices.Sort(pooled)
	for _, q := range []float64{0.5, 0.99, 0.999} {
		exact := pooled[int(q*float64(len(pooled)))-1]
		got := merged.Quantile(q)
		if got < exact || float64(got) > float64(exact)*(1+Precision(coarsest)+0.002) {
			t.Errorf("p%g: merged %v, pooled %v", 100*q, got, exact)
		}
	}
	if merged.Count() != uint64(len(pooled)) {
		t.Errorf("merged %d values of %d", merged.Count(), len(pooled))
	}
}

func TestFromSparseRefuses(t *testing.T) {
	good := NewHistogram()
	good.Record(time.Millisecond)
	for name, s := range map[string]Sparse{
		"out of order":   {Buckets: [][2]uint64{{5000, 1}, {4000, 1}}, Count: 2, Min: 1, Max: 1 << 20, Sum: 2},
		"past the range": {Buckets: [][2]uint64{{1 << 40, 1}}, Count: 1, Min: 1, Max: 1, Sum: 1},
		"a wrong count":  {Buckets: [][2]uint64{{5000, 3}}, Count: 2, Min: 1, Max: 1 << 20, Sum: 2},
		"min above max":  {Buckets: [][2]uint64{{5000, 1}}, Count: 1, Min: 9, Max: 1, Sum: 1},
		"a huge shift":   {Buckets: [][2]uint64{{5000, 1}}, Count: 1, Min: 1, Max: 1 << 20, Sum: 1, Shift: 99},
		"overflow":       {Buckets: [][2]uint64{{5000, 1 << 63}, {5001, 1 << 63}}, Count: 0, Min: 1, Max: 1 << 20, Sum: 1},
	} {
		if _, err := FromSparse(s); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
	if _, err := FromSparse(good.Sparse()); err != nil {
		t.Error(err)
	}
}
