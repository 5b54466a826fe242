package testbed

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Path shapes one direction of a DelayLine, the way a WAN path between two
// routers behaves: packets are dropped at random (Loss), wait in a
// drop-tail router queue (QueueBytes) for the line to be free, are
// serialized at RateBitsPerSecond, and arrive Delay (± Jitter) later.
type Path struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Jitter adds to each packet's delay a value drawn uniformly from
	// [-Jitter, +Jitter] (never taking the delay below zero). Unless
	// Reorder is set, a packet never overtakes the one before it: its
	// departure is held back to the previous packet's, as netem does when
	// it keeps order, so back-to-back packets see a delay skewed upwards.
	Jitter time.Duration
	// RateBitsPerSecond is the line rate, counted on whole IP packets
	// (there is no link-layer header on a TUN device). 0 = no
	// serialization and no queue: only delay, jitter and loss.
	RateBitsPerSecond int64
	// Loss is the probability (0..1) that a packet is dropped on arrival,
	// drawn from the line's seeded random source.
	Loss float64
	// QueueBytes is the router buffer: a packet that would make the bytes
	// waiting for the line exceed it is dropped (drop tail). Only with a
	// rate. 0 = QueueDelay's worth of the rate.
	QueueBytes int64
	// QueueDelay sets QueueBytes as time at the rate, when QueueBytes is 0.
	// 0 = max(DefaultQueueDelay, 2×Delay): at least one round trip's worth,
	// the classic bandwidth-delay-product buffer.
	QueueDelay time.Duration
	// Reorder lets jitter reorder packets.
	Reorder bool
	// MaxPacket, when set, drops every packet larger than this many bytes
	// (IP packet, headers included) without a word: a path-MTU black hole,
	// a device in between with a smaller MTU that sends no ICMP "packet
	// too big" back, as a switch set to 1500 between jumbo-frame hosts.
	MaxPacket int
	// FlowRateBitsPerSecond, instead of a line rate, caps each flow (IP
	// protocol, addresses and ports) at this rate, each in a drop-tail
	// queue of its own: a per-connection shaper, or a cloud's limit on one
	// flow (AWS: 5 Gbit/s outside a placement group). N connections carry
	// N times one; a connection's queue delays only itself. Not with
	// RateBitsPerSecond (a per-flow stage before a shared line is not
	// modelled).
	FlowRateBitsPerSecond int64
	// FlowQueueBytes is each flow's queue. 0 = QueueDelay's worth of the
	// flow rate, as QueueBytes is of the line's.
	FlowQueueBytes int64
	// Moderation plays the receiving end's NIC moderating its interrupts
	// as its coalescing is set: the rx-usecs timer, with the device's
	// rx-frames count. While the receiving TUN device's rx-frames (as the
	// kernel keeps it: ETHTOOL_GCOALESCE on that device, what `ethtool -c`
	// shows) is 2 or more, a packet due for delivery waits until
	// rx-frames packets are waiting or Moderation has passed since the
	// first of them became due, whichever comes first, and then all of
	// them are delivered together, as one interrupt would hand them to
	// the stack. While rx-frames is 0 or 1 nothing waits. It applies at
	// delivery, after the path's own delay, rate, queue, loss and jitter.
	//
	// Why the line plays it: no NIC on this project's machines moderates
	// in a way that matters (veth has no coalescing, the VMs' virtio_net
	// refuses a change, and a TUN device keeps rx-frames as its
	// rx_batched but that batches nothing written with write(2)). So the
	// setting is real, and changed by the real means (`ethtool -C tun-b
	// rx-frames 8` in B's namespace, or narrows' agent with `net rr
	// --try-coalescing`, which lowers it through SIOCETHTOOL), and the line
	// reads it (every 2 ms while it carries packets, and afresh after a
	// rest: moderation_linux.go) and does what a NIC so set would.
	// PathStats counts the packets it held. 0 = no moderation, whatever
	// the device says, and no reading of it.
	Moderation time.Duration
}

// MaxModeration bounds Path.Moderation: a NIC's interrupt timer is
// microseconds (ethtool's rx-usecs); one of a second would be a mistake.
const MaxModeration = time.Second

// DefaultQueueDelay is the least default router buffer, as time at the rate.
const DefaultQueueDelay = 50 * time.Millisecond

// DefaultMaxHeld bounds the packets one direction holds at once (in the
// queue or "on the wire"), so a runaway sender cannot exhaust memory: about
// 94 MiB at MTU 1500. 65,536 full-size packets in flight is 786 Mbit/s at
// a one-second one-way delay.
const DefaultMaxHeld = 1 << 16

// DelayLineOptions shape both directions of a DelayLine. The path fields
// apply to both directions; AtoB or BtoA, when set, replace them for that
// direction (RTT included).
type DelayLineOptions struct {
	// RTT is split into the two one-way delays: RTT/2 each way (A→B gets
	// the odd nanosecond, if any).
	RTT               time.Duration
	Jitter            time.Duration
	RateBitsPerSecond int64
	Loss              float64
	QueueBytes        int64
	QueueDelay        time.Duration
	Reorder           bool
	// FlowRateBitsPerSecond and FlowQueueBytes: Path's, both ways.
	FlowRateBitsPerSecond int64
	FlowQueueBytes        int64
	// Moderation: Path's, both ways (each read from its receiving device:
	// tun-b's rx-frames for A→B, tun-a's for B→A).
	Moderation time.Duration

	AtoB, BtoA *Path

	// MTU of both TUN devices. 0 = 1500.
	MTU int
	// Seed seeds loss and jitter; each direction draws from its own
	// stream derived from it. 0 = 1.
	Seed uint64
	// MaxHeld bounds the packets held per direction. 0 = DefaultMaxHeld.
	MaxHeld int
	// NoRealtime keeps the forwarder's threads at ordinary priority. By
	// default they ask for the lowest real-time priority (SCHED_FIFO 1,
	// when allowed), so that other processes on a busy machine cannot
	// hold a departure back by milliseconds.
	NoRealtime bool
	// LetCPUsSleep: the forwarder holds no CPU latency request, so idle
	// CPUs sleep as the machine has them (narrows host's experiments
	// measure exactly that; by default the line keeps them awake while it
	// exists, for its own timing: procs_linux.go).
	LetCPUsSleep bool
}

// paths resolves the two directions, with defaults filled in and checked;
// o.MTU must be set.
func (o DelayLineOptions) paths() (ab, ba Path, err error) {
	shared := func(delay time.Duration) Path {
		return Path{Delay: delay, Jitter: o.Jitter, RateBitsPerSecond: o.RateBitsPerSecond, Loss: o.Loss,
			QueueBytes: o.QueueBytes, QueueDelay: o.QueueDelay, Reorder: o.Reorder,
			FlowRateBitsPerSecond: o.FlowRateBitsPerSecond, FlowQueueBytes: o.FlowQueueBytes,
			Moderation: o.Moderation}
	}
	if o.RTT < 0 {
		return ab, ba, errors.New("testbed: negative RTT")
	}
	ab, ba = shared(o.RTT-o.RTT/2), shared(o.RTT/2)
	if o.AtoB != nil {
		ab = *o.AtoB
	}
	if o.BtoA != nil {
		ba = *o.BtoA
	}
	if ab, err = ab.withDefaults(o.MTU); err != nil {
		return ab, ba, fmt.Errorf("testbed: A→B: %w", err)
	}
	if ba, err = ba.withDefaults(o.MTU); err != nil {
		return ab, ba, fmt.Errorf("testbed: B→A: %w", err)
	}
	return ab, ba, nil
}

func (p Path) withDefaults(mtu int) (Path, error) {
	switch {
	case p.Delay < 0 || p.Jitter < 0 || p.QueueDelay < 0 || p.Moderation < 0:
		return p, errors.New("negative delay, jitter, queue delay or moderation")
	case p.Moderation > MaxModeration:
		return p, fmt.Errorf("moderation %v: a NIC's rx-usecs timer is at most %v here", p.Moderation, MaxModeration)
	case p.RateBitsPerSecond < 0 || p.QueueBytes < 0 || p.FlowRateBitsPerSecond < 0 || p.FlowQueueBytes < 0:
		return p, errors.New("negative rate or queue size")
	case math.IsNaN(p.Loss) || p.Loss < 0 || p.Loss >= 1:
		return p, fmt.Errorf("loss %v: use a probability from 0 to below 1", p.Loss)
	case p.MaxPacket < 0 || (p.MaxPacket > 0 && p.MaxPacket < 68):
		return p, errors.New("MaxPacket below 68 bytes, the least IPv4 MTU")
	case p.Delay > time.Hour || p.Jitter > time.Hour:
		return p, errors.New("delay or jitter over an hour")
	}
	if p.FlowRateBitsPerSecond > 0 {
		if p.RateBitsPerSecond > 0 || p.QueueBytes > 0 {
			return p, errors.New("a per-flow rate with a line rate or its queue is not modelled: give the rate per flow or for the line, not both")
		}
		p.QueueDelay = queueDelay(p)
		if p.FlowQueueBytes == 0 {
			p.FlowQueueBytes = max(int64(float64(p.FlowRateBitsPerSecond)/8*p.QueueDelay.Seconds()), int64(mtu))
		}
		if p.FlowQueueBytes < int64(mtu) {
			return p, fmt.Errorf("flow queue of %d bytes cannot hold one %d-byte packet", p.FlowQueueBytes, mtu)
		}
		return p, nil
	}
	if p.FlowQueueBytes != 0 {
		return p, errors.New("a flow queue needs a per-flow rate: give one (FlowRateBitsPerSecond, --flow-rate) or leave the flow queue out")
	}
	if p.RateBitsPerSecond == 0 {
		if p.QueueBytes != 0 || p.QueueDelay != 0 {
			return p, errors.New("a queue limit needs a rate: without one nothing ever waits")
		}
		return p, nil
	}
	if p.QueueBytes == 0 {
		d := queueDelay(p)
		p.QueueBytes = int64(float64(p.RateBitsPerSecond) / 8 * d.Seconds())
		p.QueueDelay = d
		p.QueueBytes = max(p.QueueBytes, int64(mtu)) // a full-size packet must fit
	}
	if p.QueueBytes < int64(mtu) {
		return p, fmt.Errorf("queue of %d bytes cannot hold one %d-byte packet", p.QueueBytes, mtu)
	}
	return p, nil
}

// queueDelay is p's queue as time at its rate: QueueDelay, else at least
// one round trip's worth.
func queueDelay(p Path) time.Duration {
	if p.QueueDelay != 0 {
		return p.QueueDelay
	}
	return max(DefaultQueueDelay, 2*p.Delay)
}

// CheckDelayLineOptions returns o with its defaults filled in (AtoB and
// BtoA set, queues sized), or what is wrong with it. NewDelayLine does the
// same before anything else.
func CheckDelayLineOptions(o DelayLineOptions) (DelayLineOptions, error) { return o.withDefaults() }

func (o DelayLineOptions) withDefaults() (DelayLineOptions, error) {
	if o.MTU == 0 {
		o.MTU = DefaultMTU
	}
	if o.MTU < 576 || o.MTU > 65535 {
		return o, errors.New("testbed: MTU must be within 576..65535")
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.MaxHeld == 0 {
		o.MaxHeld = DefaultMaxHeld
	}
	if o.MaxHeld < 0 {
		return o, errors.New("testbed: negative MaxHeld")
	}
	ab, ba, err := o.paths()
	if err != nil {
		return o, err
	}
	o.AtoB, o.BtoA = &ab, &ba
	return o, nil
}

// PathStats counts what one direction of a DelayLine did.
type PathStats struct {
	// Packets and Bytes were delivered to the far TUN device (IP bytes).
	Packets, Bytes int64
	// DroppedLoss were dropped at random (Path.Loss).
	DroppedLoss int64
	// DroppedQueue were dropped because the router queue was full.
	DroppedQueue int64
	// DroppedHeld were dropped because MaxHeld packets were already held.
	DroppedHeld int64
	// DroppedTooBig were larger than Path.MaxPacket (the black hole).
	DroppedTooBig int64
	// QueueWait is the time the packets accepted waited in the router
	// queue for the line, in all, and Queued how many they were: their
	// mean wait is the queueing delay the line really added (the truth a
	// measurement of round trips under load is held to).
	QueueWait time.Duration
	Queued    int64
	// SmallWait and SmallQueued are the same for the small packets alone
	// (SmallPacket bytes at most: a query, an acknowledgement), which
	// sample the queue as a round trip does, not as the bulk transfer
	// that fills it.
	SmallWait   time.Duration
	SmallQueued int64
	// SmallDropped are the small packets the full router queue dropped:
	// a query or its acknowledgement lost, whose round trip then waits
	// for TCP's retransmit timer.
	SmallDropped int64
	// Held are in the line now: queued or "on the wire".
	Held int64
	// LateTotal and LateMax are how far after its departure time each
	// delivered packet was written: the delay line's own timing error.
	LateTotal, LateMax time.Duration
	// LateOver1ms counts packets written more than a millisecond late.
	LateOver1ms int64
	// WriteErrors counts packets the far TUN device refused.
	WriteErrors int64
	// ModerationHeld counts the packets the receiving NIC's moderation
	// (Path.Moderation) held past their departure, and ModerationWait is
	// how long, in all, by the model (LateTotal has the line's own error
	// beyond it). ModerationTimeouts counts those delivered because the
	// timer ran out rather than because rx-frames packets were waiting.
	// ModerationLate is the line's own lateness of the packets it held,
	// in all, beyond the model's time (its timer is a sleep, which an
	// idle CPU wakes from late): what a held packet really waited is
	// ModerationWait and ModerationLate over ModerationHeld.
	ModerationHeld     int64
	ModerationWait     time.Duration
	ModerationTimeouts int64
	ModerationLate     time.Duration
}

// SmallPacket is the largest packet SmallWait counts: a 64-byte query
// with its IP and TCP headers fits, a full data segment does not.
const SmallPacket = 256

// QueueWaitMean is the mean wait in the router queue of the packets it accepted.
func (s PathStats) QueueWaitMean() time.Duration {
	if s.Queued == 0 {
		return 0
	}
	return s.QueueWait / time.Duration(s.Queued)
}

// Sub is what happened between an earlier reading and this one (the
// counters; Held and LateMax are this reading's).
func (s PathStats) Sub(earlier PathStats) PathStats {
	s.Packets -= earlier.Packets
	s.Bytes -= earlier.Bytes
	s.DroppedLoss -= earlier.DroppedLoss
	s.DroppedQueue -= earlier.DroppedQueue
	s.DroppedHeld -= earlier.DroppedHeld
	s.DroppedTooBig -= earlier.DroppedTooBig
	s.QueueWait -= earlier.QueueWait
	s.Queued -= earlier.Queued
	s.SmallWait -= earlier.SmallWait
	s.SmallQueued -= earlier.SmallQueued
	s.SmallDropped -= earlier.SmallDropped
	s.LateTotal -= earlier.LateTotal
	s.LateOver1ms -= earlier.LateOver1ms
	s.WriteErrors -= earlier.WriteErrors
	s.ModerationHeld -= earlier.ModerationHeld
	s.ModerationWait -= earlier.ModerationWait
	s.ModerationTimeouts -= earlier.ModerationTimeouts
	s.ModerationLate -= earlier.ModerationLate
	return s
}

// LateMean is the mean of how late packets were written.
func (s PathStats) LateMean() time.Duration {
	if s.Packets == 0 {
		return 0
	}
	return s.LateTotal / time.Duration(s.Packets)
}

// DelayLineStats counts both directions.
type DelayLineStats struct {
	AtoB, BtoA PathStats
}

// DelayLine is two hosts (namespaces) joined by a TUN device in each, with
// a forwarder in this process moving packets between them through a
// shaper per direction. See Path for what it emulates.
type DelayLine struct {
	A, B    *Host
	Options DelayLineOptions // with defaults filled in: AtoB and BtoA are set
	// Prefix is the /24 both hosts' addresses are in (each TUN device has
	// a point-to-point /32 with the other host as its peer).
	Prefix netip.Prefix

	closeOnce sync.Once
	closeErr  error
	impl      delayLineImpl // per platform
}

// Hosts returns A and B.
func (l *DelayLine) Hosts() []*Host { return []*Host{l.A, l.B} }

// Close stops the forwarder, closes the TUN devices (which removes them)
// and deletes both namespaces (delayLineImpl.close, per platform). It is
// idempotent: later calls return the first call's result.
func (l *DelayLine) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.impl.close(l.Hosts()) })
	return l.closeErr
}

// String describes a path: "delay 20ms ±1ms, 50 Mbit/s, queue 312500 B, loss 0.1%".
func (p Path) String() string {
	s := "delay " + p.Delay.String()
	if p.Jitter > 0 {
		s += " ±" + p.Jitter.String()
		if p.Reorder {
			s += " (reordering)"
		}
	}
	if p.RateBitsPerSecond > 0 {
		s += fmt.Sprintf(", %g Mbit/s, queue %d B", float64(p.RateBitsPerSecond)/1e6, p.QueueBytes)
	} else {
		s += ", no rate limit"
	}
	if p.Loss > 0 {
		s += fmt.Sprintf(", loss %g%%", 100*p.Loss)
	}
	if p.MaxPacket > 0 {
		s += fmt.Sprintf(", packets over %d B dropped", p.MaxPacket)
	}
	if p.Moderation > 0 {
		s += ", receiver's interrupt moderation " + p.Moderation.String()
	}
	return s
}
