package testbed

import (
	"math"
	"math/rand/v2"
	"time"
)

// verdict is what a shaper decided for one arriving packet.
type verdict int

const (
	forward verdict = iota
	dropLoss
	dropQueue
	dropTooBig
)

// shaper is the model of one direction, apart from any I/O or clock: given
// a packet's arrival time and size, it says when the packet leaves the far
// end, or why it is dropped. Times are offsets from the line's start.
//
// The line is a single server: a packet's transmission starts at
// max(arrival, the end of the previous transmission) and takes
// size×8/rate; the bytes still waiting for the line when a packet arrives
// are (linkFree − arrival) × rate, and the packet is dropped when they and
// it would exceed the queue. It then travels Delay ± Jitter.
type shaper struct {
	p        Path
	rng      *rand.Rand
	linkFree time.Duration // when the line finishes what it has accepted
	lastDep  time.Duration // the latest departure handed out
}

func newShaper(p Path, seed, stream uint64) *shaper {
	return &shaper{p: p, rng: rand.New(rand.NewPCG(seed, stream))}
}

// txTime is how long size bytes take on the line.
func (s *shaper) txTime(size int) time.Duration {
	if s.p.RateBitsPerSecond == 0 {
		return 0
	}
	return time.Duration(int64(size) * 8 * int64(time.Second) / s.p.RateBitsPerSecond)
}

// backlogBytes is what waits for the line at now, the packet being sent
// included (its unsent part).
func (s *shaper) backlogBytes(now time.Duration) int64 {
	if s.p.RateBitsPerSecond == 0 || s.linkFree <= now {
		return 0
	}
	wait := s.linkFree - now
	// float64: wait × rate overflows int64 beyond about a second at 10 Gbit/s.
	return int64(math.Ceil(wait.Seconds() * float64(s.p.RateBitsPerSecond) / 8))
}

// arrive takes a packet of size bytes arriving at now and returns its
// departure time from the far end, or a drop verdict.
func (s *shaper) arrive(now time.Duration, size int) (time.Duration, verdict) {
	dep, _, v := s.arriveWait(now, size)
	return dep, v
}

// arriveWait is arrive, also saying how long the packet waits in the
// queue for the line.
func (s *shaper) arriveWait(now time.Duration, size int) (dep, wait time.Duration, v verdict) {
	if s.p.MaxPacket > 0 && size > s.p.MaxPacket {
		return 0, 0, dropTooBig
	}
	if s.p.Loss > 0 && s.rng.Float64() < s.p.Loss {
		return 0, 0, dropLoss
	}
	if s.p.RateBitsPerSecond > 0 && s.backlogBytes(now)+int64(size) > s.p.QueueBytes {
		return 0, 0, dropQueue
	}
	start := max(now, s.linkFree)
	end := start + s.txTime(size)
	s.linkFree = end
	delay := s.p.Delay
	if j := s.p.Jitter; j > 0 {
		delay += time.Duration(s.rng.Int64N(int64(2*j)+1)) - j
		delay = max(delay, 0)
	}
	dep = end + delay
	if !s.p.Reorder {
		dep = max(dep, s.lastDep)
	}
	s.lastDep = max(s.lastDep, dep)
	return dep, start - now, forward
}
