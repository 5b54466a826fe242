package metric

import (
	"math"
	"time"
)

// TrimmedMean is the mean of the lowest keep (0..1] of the recorded
// values: the single-sided trimmed mean of the IETF draft "Responsiveness
// under Working Conditions" (draft-ietf-ippm-responsiveness, its TM with
// TMP 95%: keep 0.95 drops the slowest 5%). Values in the bucket that
// straddles the cut are counted at the bucket's midpoint, the others at
// theirs, so the result is within the histogram's 0.1%.
func (h *Histogram) TrimmedMean(keep float64) time.Duration {
	if h.total == 0 || keep <= 0 {
		return 0
	}
	keep = min(keep, 1)
	want := uint64(math.Ceil(keep * float64(h.total)))
	if want == h.total {
		return h.Mean() // exact where nothing is trimmed
	}
	var n uint64
	var sum float64
	for i, c := range h.buckets() {
		take := min(c, want-n)
		lo, hi := bounds(i)
		mid := float64(lo+hi) / 2
		mid = min(max(mid, float64(h.min)), float64(h.max))
		sum += float64(take) * mid
		n += take
		if n >= want {
			break
		}
	}
	return time.Duration(sum / float64(n))
}

// TrimKeep is the draft's TMP: the slowest 5% of probes are trimmed.
const TrimKeep = 0.95

// Responsiveness is round trips per minute as the draft's TCP-only case
// defines it, from the trimmed means of its three probe kinds:
//
//	foreign = 60 s / ((handshake + separate) / 2)
//	loaded  = 60 s / self
//	RPM     = (foreign + loaded) / 2
//
// handshake is a fresh connection's TCP handshake, separate a round trip
// on a connection of its own (the draft's tcp_f and http_f), self a round
// trip on the load-generating connections (http_l), all timed while the
// load runs. A probe kind not measured (0) drops out: with no handshake
// the foreign part is the separate round trip alone; with no self probe
// the result is the foreign part alone. 0 when nothing was measured.
func Responsiveness(handshake, separate, self time.Duration) float64 {
	perMinute := func(d time.Duration) float64 { return float64(time.Minute) / float64(d) }
	var foreign float64
	switch {
	case handshake > 0 && separate > 0:
		foreign = perMinute((handshake + separate) / 2)
	case separate > 0:
		foreign = perMinute(separate)
	case handshake > 0:
		foreign = perMinute(handshake)
	}
	switch {
	case self > 0 && foreign > 0:
		return (foreign + perMinute(self)) / 2
	case self > 0:
		return perMinute(self)
	}
	return foreign
}
