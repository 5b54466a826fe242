package metric

import (
	"iter"
	"math"
	"math/bits"
	"time"
)

// Histogram records latencies in nanoseconds in the HdrHistogram layout:
// exact below 2048 ns, then 1024 linear sub-buckets per power of two, so
// any reported value is within 0.1% of the recorded one (three significant
// digits). Recording is a shift and an increment: cheap enough for a round
// trip of a few microseconds. Not safe for concurrent use.
//
// Its 32,768 buckets (256 KiB) are kept in pages of 1024, one per power of
// two, each allocated when a value first lands in it: a watch's round trips
// of one link span a few powers of two, so a histogram costs a few pages
// (8 KiB each) and 200 links' watches, with several histograms each, stay
// within megabytes rather than the hundreds a flat array took.
type Histogram struct {
	pages    [pageCnt]*[pageLen]uint64
	total    uint64
	sum      float64
	min, max int64
}

const (
	subBucketBits = 11
	subBucketCnt  = 1 << subBucketBits // exact range [0, 2048)
	halfCnt       = subBucketCnt / 2
	maxShift      = 30 // largest value: 2^41 ns, about 36 minutes
	bucketCnt     = subBucketCnt + maxShift*halfCnt
	// MaxValue is the largest latency a Histogram keeps; larger ones are
	// clamped to it (and still counted).
	MaxValue = time.Duration(1<<(subBucketBits+maxShift)) - 1

	pageBits = subBucketBits - 1 // a page is one power of two's sub-buckets
	pageLen  = 1 << pageBits
	pageCnt  = bucketCnt / pageLen
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{min: math.MaxInt64}
}

// add counts c more values in bucket i, allocating its page if need be.
func (h *Histogram) add(i int, c uint64) {
	p := h.pages[i>>pageBits]
	if p == nil {
		p = new([pageLen]uint64)
		h.pages[i>>pageBits] = p
	}
	p[i&(pageLen-1)] += c
}

// buckets yields each non-empty bucket's index and count, in order.
func (h *Histogram) buckets() iter.Seq2[int, uint64] {
	return func(yield func(int, uint64) bool) {
		for pi, p := range h.pages {
			if p == nil {
				continue
			}
			for j, c := range p {
				if c != 0 && !yield(pi<<pageBits+j, c) {
					return
				}
			}
		}
	}
}

func index(v int64) int {
	if v < subBucketCnt {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBucketBits
	return subBucketCnt + (shift-1)*halfCnt + int(v>>uint(shift)) - halfCnt
}

// bounds returns the lowest and highest value that share bucket i.
func bounds(i int) (lo, hi int64) {
	if i < subBucketCnt {
		return int64(i), int64(i)
	}
	shift := uint((i-subBucketCnt)/halfCnt + 1)
	m := int64((i-subBucketCnt)%halfCnt + halfCnt)
	return m << shift, (m+1)<<shift - 1
}

// Record adds one value.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	if v > int64(MaxValue) {
		v = int64(MaxValue)
	}
	h.add(index(v), 1)
	h.total++
	h.sum += float64(v)
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// Count is the number of values recorded.
func (h *Histogram) Count() uint64 { return h.total }

// Mean is the exact arithmetic mean of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.total))
}

// Sum is the exact total of the recorded values.
func (h *Histogram) Sum() time.Duration { return time.Duration(h.sum) }

// Min and Max are exact.
func (h *Histogram) Min() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.min)
}

// Max is the largest value recorded.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the value at or below which q (0..1) of the recorded
// values fall, as the highest value equivalent to that bucket (HdrHistogram's
// convention), never above the exact maximum.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	if q <= 0 {
		return h.Min()
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.total {
		rank = h.total
	}
	var seen uint64
	for i, c := range h.buckets() {
		seen += c
		if seen >= rank {
			_, hi := bounds(i)
			if hi > h.max {
				hi = h.max
			}
			if hi < h.min {
				hi = h.min
			}
			return time.Duration(hi)
		}
	}
	return time.Duration(h.max)
}

// Merge adds other's values into h.
func (h *Histogram) Merge(other *Histogram) {
	if other.total == 0 {
		return
	}
	for i, c := range other.buckets() {
		h.add(i, c)
	}
	h.total += other.total
	h.sum += other.sum
	if other.min < h.min {
		h.min = other.min
	}
	if other.max > h.max {
		h.max = other.max
	}
}

// Reset empties h, keeping the pages it has.
func (h *Histogram) Reset() {
	for _, p := range h.pages {
		if p != nil {
			clear(p[:])
		}
	}
	h.total, h.sum, h.min, h.max = 0, 0, math.MaxInt64, 0
}
