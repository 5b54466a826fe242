package metric

import (
	"errors"
	"fmt"
	"math"
)

// Sparse is a Histogram as it travels (an agent's part of a fleet's
// latencies): its non-empty buckets, each [index, count], in order,
// coarsened until there are at most MaxSparse of them; and its exact
// count, sum, min and max. Merged, many hosts' Sparse give the fleet's
// true percentiles, within the coarsening's precision (Precision).
type Sparse struct {
	Buckets [][2]uint64 `json:"buckets"`
	// Shift is the coarsening: 2^Shift adjacent buckets were counted as
	// their highest, so a quantile reads at most that much high (0: the
	// Histogram's own 0.1%).
	Shift int     `json:"shift,omitempty"`
	Count uint64  `json:"count"`
	Sum   float64 `json:"sum_ns"`
	Min   int64   `json:"min_ns"`
	Max   int64   `json:"max_ns"`
}

// MaxSparse bounds a Sparse's buckets (Histogram.Sparse's default).
const MaxSparse = 512

// SparseBudget is the buckets all of one report's histograms may hold
// together (a disk test's patterns share it): about 34 KiB of JSON, so
// that they fit one frame of the agent's protocol beside the rest.
const SparseBudget = 2400

// Precision is the largest relative error a quantile of a Sparse of
// coarsening shift reads with: its buckets are 2^shift of the
// Histogram's 1/1024-wide ones.
func Precision(shift int) float64 { return float64(int(1)<<shift) / halfCnt }

// Sparse is h's buckets, coarsened to at most MaxSparse.
func (h *Histogram) Sparse() Sparse { return h.SparseAtMost(MaxSparse) }

// SparseAtMost is h's buckets, coarsened to at most n (at least 1).
func (h *Histogram) SparseAtMost(n int) Sparse {
	n = max(n, 1)
	s := Sparse{Count: h.total, Sum: h.sum, Min: h.min, Max: h.max}
	if h.total == 0 {
		s.Min = 0
		return s
	}
	for shift := 0; shift <= subBucketBits-1; shift++ {
		s.Buckets, s.Shift = h.coarse(shift), shift
		if len(s.Buckets) <= n {
			break
		}
	}
	return s
}

// coarse counts each run of 2^shift buckets of one power of two as the
// run's highest bucket.
func (h *Histogram) coarse(shift int) [][2]uint64 {
	var out [][2]uint64
	mask := (1 << shift) - 1
	for i, c := range h.buckets() {
		j := i | mask
		if i >= subBucketCnt {
			base := subBucketCnt + ((i-subBucketCnt)/halfCnt)*halfCnt
			j = base + ((i - base) | mask)
		}
		if n := len(out); n > 0 && out[n-1][0] == uint64(j) {
			out[n-1][1] += c
			continue
		}
		out = append(out, [2]uint64{uint64(j), c})
	}
	return out
}

// FromSparse is the Histogram s describes, or why s cannot be one (from
// an agent: an index out of range or out of order, counts that do not
// add to Count, a min above the max).
func FromSparse(s Sparse) (*Histogram, error) {
	h := NewHistogram()
	var total uint64
	last := -1
	for _, b := range s.Buckets {
		i := int(min(b[0], math.MaxInt32))
		if i <= last || i >= bucketCnt || b[1] == 0 {
			return nil, fmt.Errorf("a histogram's bucket %d (after %d) with %d values: not a histogram", b[0], last, b[1])
		}
		last = i
		h.add(i, b[1])
		if total += b[1]; total < b[1] {
			return nil, errors.New("a histogram's counts overflow")
		}
	}
	switch {
	case total != s.Count:
		return nil, fmt.Errorf("a histogram's buckets hold %d values and it says %d", total, s.Count)
	case s.Shift < 0 || s.Shift >= subBucketBits:
		return nil, fmt.Errorf("a histogram coarsened by 2^%d", s.Shift)
	case total > 0 && (s.Min < 0 || s.Min > s.Max || s.Max > int64(MaxValue) || !(s.Sum >= 0 && s.Sum <= float64(s.Max)*float64(total))):
		return nil, fmt.Errorf("a histogram's min %d, max %d and sum %g do not hold together", s.Min, s.Max, s.Sum)
	}
	h.total, h.sum = total, s.Sum
	if total > 0 {
		h.min, h.max = s.Min, s.Max
	}
	return h, nil
}
