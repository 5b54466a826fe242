package testbed

import (
	"encoding/binary"
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
// are (free − arrival) × rate, and the packet is dropped when they and
// it would exceed the queue. It then travels Delay ± Jitter.
//
// With a per-flow rate (Path.FlowRateBitsPerSecond) there is no shared
// line: each flow is a server of its own, with its own queue, as a
// per-connection shaper or a cloud's per-flow limit makes it. A flow
// never overtakes itself; flows pass one another.
type shaper struct {
	p     Path
	rng   *rand.Rand
	line  server              // the shared line (unused with a per-flow rate)
	flows map[flowKey]*server // per flow, with a per-flow rate
	// sweepAt is the number of flows at which the idle ones are next
	// forgotten: twice what a sweep left, so a sweep is paid for by as
	// many new flows as it kept.
	sweepAt int
}

// server is one FIFO served at a rate: the line, or one flow's shaper.
type server struct {
	free    time.Duration // when it finishes what it has accepted
	lastDep time.Duration // the latest departure handed out
}

func newShaper(p Path, seed, stream uint64) *shaper {
	s := &shaper{p: p, rng: rand.New(rand.NewPCG(seed, stream))}
	if p.FlowRateBitsPerSecond > 0 {
		s.flows = map[flowKey]*server{}
	}
	return s
}

// txTime is how long size bytes take at rate bits/s (0: no time).
func txTime(size int, rate int64) time.Duration {
	if rate == 0 {
		return 0
	}
	return time.Duration(int64(size) * 8 * int64(time.Second) / rate)
}

// backlogBytes is what waits for a server of rate bits/s at now, the
// packet being sent included (its unsent part).
func (sv *server) backlogBytes(now time.Duration, rate int64) int64 {
	if rate == 0 || sv.free <= now {
		return 0
	}
	wait := sv.free - now
	// float64: wait × rate overflows int64 beyond about a second at 10 Gbit/s.
	return int64(math.Ceil(wait.Seconds() * float64(rate) / 8))
}

// arrive takes a packet of size bytes arriving at now and returns its
// departure time from the far end, or a drop verdict.
func (s *shaper) arrive(now time.Duration, size int) (time.Duration, verdict) {
	dep, _, v := s.arriveWait(now, size, nil)
	return dep, v
}

// arriveWait is arrive, also saying how long the packet waits in the
// queue for the line (or its flow's shaper). pkt is the packet, read for
// its flow when there is a per-flow rate; nil is one flow.
func (s *shaper) arriveWait(now time.Duration, size int, pkt []byte) (dep, wait time.Duration, v verdict) {
	if s.p.MaxPacket > 0 && size > s.p.MaxPacket {
		return 0, 0, dropTooBig
	}
	if s.p.Loss > 0 && s.rng.Float64() < s.p.Loss {
		return 0, 0, dropLoss
	}
	sv, rate, limit := &s.line, s.p.RateBitsPerSecond, s.p.QueueBytes
	if s.flows != nil {
		sv, rate, limit = s.flow(flowOf(pkt), now), s.p.FlowRateBitsPerSecond, s.p.FlowQueueBytes
	}
	if rate > 0 && sv.backlogBytes(now, rate)+int64(size) > limit {
		return 0, 0, dropQueue
	}
	start := max(now, sv.free)
	end := start + txTime(size, rate)
	sv.free = end
	delay := s.p.Delay
	if j := s.p.Jitter; j > 0 {
		delay += time.Duration(s.rng.Int64N(int64(2*j)+1)) - j
		delay = max(delay, 0)
	}
	dep = end + delay
	if !s.p.Reorder {
		dep = max(dep, sv.lastDep)
	}
	sv.lastDep = max(sv.lastDep, dep)
	return dep, start - now, forward
}

// maxIdleFlows is how many flows the shaper keeps before it forgets the
// idle ones (nothing queued, nothing in flight): their state is that of
// a new flow.
const maxIdleFlows = 4096

// flow is k's server, made on its first packet.
func (s *shaper) flow(k flowKey, now time.Duration) *server {
	if sv, ok := s.flows[k]; ok {
		return sv
	}
	if len(s.flows) >= max(s.sweepAt, maxIdleFlows) {
		for fk, sv := range s.flows {
			if sv.free <= now && sv.lastDep <= now {
				delete(s.flows, fk)
			}
		}
		s.sweepAt = 2 * len(s.flows)
	}
	sv := &server{}
	s.flows[k] = sv
	return sv
}

// flowKey names a flow: its IP protocol, addresses and (TCP, UDP) ports.
type flowKey struct {
	proto        byte
	src, dst     [16]byte
	sport, dport uint16
}

// flowOf reads pkt's flow from its IPv4 or IPv6 header. What is not IP,
// or too short to tell, is one flow of its own (the zero key); a
// fragment after the first, with no ports, is its addresses' flow.
func flowOf(pkt []byte) flowKey {
	var k flowKey
	if len(pkt) == 0 {
		return k
	}
	l4 := 0
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < 20 {
			return k
		}
		k.proto = pkt[9]
		copy(k.src[:], pkt[12:16])
		copy(k.dst[:], pkt[16:20])
		if binary.BigEndian.Uint16(pkt[6:8])&0x1fff == 0 { // the first fragment, or none
			l4 = int(pkt[0]&0x0f) * 4
		}
	case 6:
		if len(pkt) < 40 {
			return k
		}
		k.proto = pkt[6]
		copy(k.src[:], pkt[8:24])
		copy(k.dst[:], pkt[24:40])
		l4 = 40
	default:
		return k
	}
	if l4 > 0 && (k.proto == 6 || k.proto == 17) && len(pkt) >= l4+4 {
		k.sport = binary.BigEndian.Uint16(pkt[l4:])
		k.dport = binary.BigEndian.Uint16(pkt[l4+2:])
	}
	return k
}
