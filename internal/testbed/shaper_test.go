package testbed

import (
	"math"
	"slices"
	"testing"
	"time"
)

// The shaper is the delay line's arithmetic without I/O or a clock: these
// tests drive it with made-up arrival times.

func TestShaperSerialization(t *testing.T) {
	const ms = time.Millisecond
	// 10 Mbit/s: 1250 bytes take exactly 1 ms.
	p := Path{Delay: 5 * ms, RateBitsPerSecond: 10_000_000, QueueBytes: 5 * 1250}
	tests := []struct {
		name    string
		arrive  []time.Duration
		wantDep []time.Duration // -1: dropped because the queue is full
	}{
		{"idle line: delay plus one serialization", []time.Duration{0}, []time.Duration{6 * ms}},
		{"spaced wider than the line: no wait", []time.Duration{0, 2 * ms, 4 * ms}, []time.Duration{6 * ms, 8 * ms, 10 * ms}},
		{"back to back: each waits for the one before", []time.Duration{0, 0, 0}, []time.Duration{6 * ms, 7 * ms, 8 * ms}},
		{"arrives mid-transmission", []time.Duration{0, ms / 2}, []time.Duration{6 * ms, 7 * ms}},
		// The queue holds 5 packets' worth, the one on the line included:
		// the sixth of a burst is dropped, and a later one fits again.
		{"drop tail", []time.Duration{0, 0, 0, 0, 0, 0, 1 * ms},
			[]time.Duration{6 * ms, 7 * ms, 8 * ms, 9 * ms, 10 * ms, -1, 11 * ms}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newShaper(p, 1, 1)
			for i, at := range tc.arrive {
				dep, v := s.arrive(at, 1250)
				if want := tc.wantDep[i]; want < 0 {
					if v != dropQueue {
						t.Errorf("packet %d: verdict %v (departs %v), want dropped by the queue", i, v, dep)
					}
				} else if v != forward || dep != want {
					t.Errorf("packet %d arriving at %v: departs %v (verdict %v), want %v", i, at, dep, v, want)
				}
			}
		})
	}
}

func TestShaperRate(t *testing.T) {
	// Whatever arrives, departures never come faster than the rate: n
	// packets offered far above it leave spaced exactly size×8/rate.
	for _, rate := range []int64{1_000_000, 50_000_000, 1_000_000_000, 10_000_000_000} {
		s := newShaper(Path{RateBitsPerSecond: rate, QueueBytes: 1 << 30}, 1, 1)
		const n, size = 10000, 1500
		var last time.Duration
		for i := range n {
			dep, v := s.arrive(time.Duration(i), size) // 1 ns apart
			if v != forward {
				t.Fatalf("rate %d: packet %d dropped", rate, i)
			}
			last = dep
		}
		got := float64(n*size*8) / last.Seconds()
		if math.Abs(got/float64(rate)-1) > 1e-4 {
			t.Errorf("rate %d bit/s: %d packets left at %.6g bit/s", rate, n, got)
		}
	}
}

func TestShaperLoss(t *testing.T) {
	tests := []struct {
		loss float64
		n    int
	}{{0.001, 200000}, {0.01, 100000}, {0.1, 100000}, {0.5, 10000}}
	for _, tc := range tests {
		s := newShaper(Path{Loss: tc.loss}, 99, 1)
		dropped := 0
		for i := range tc.n {
			if _, v := s.arrive(time.Duration(i), 100); v == dropLoss {
				dropped++
			}
		}
		mean := tc.loss * float64(tc.n)
		sigma := math.Sqrt(float64(tc.n) * tc.loss * (1 - tc.loss))
		if math.Abs(float64(dropped)-mean) > 4*sigma {
			t.Errorf("loss %g: dropped %d of %d, want %.0f ± %.0f (4σ)", tc.loss, dropped, tc.n, mean, 4*sigma)
		}
	}
}

func TestShaperSeeded(t *testing.T) {
	p := Path{Delay: time.Millisecond, Jitter: time.Millisecond, Loss: 0.1, Reorder: true}
	run := func(seed, stream uint64) []time.Duration {
		s := newShaper(p, seed, stream)
		var out []time.Duration
		for i := range 1000 {
			dep, v := s.arrive(time.Duration(i)*time.Microsecond, 100)
			if v != forward {
				dep = -1
			}
			out = append(out, dep)
		}
		return out
	}
	if !slices.Equal(run(5, 1), run(5, 1)) {
		t.Error("the same seed gave different losses or delays")
	}
	if slices.Equal(run(5, 1), run(5, 2)) || slices.Equal(run(5, 1), run(6, 1)) {
		t.Error("different seeds or directions gave the same draws")
	}
}

func TestShaperJitter(t *testing.T) {
	const delay, jitter = 10 * time.Millisecond, 2 * time.Millisecond
	tests := []struct {
		name    string
		reorder bool
		gap     time.Duration
	}{
		{"sparse keeps order without holding back", false, 5 * time.Millisecond},
		{"dense keeps order by holding back", false, 100 * time.Microsecond},
		{"dense with reordering", true, 100 * time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newShaper(Path{Delay: delay, Jitter: jitter, Reorder: tc.reorder}, 3, 1)
			var deps, delays []time.Duration
			for i := range 20000 {
				at := time.Duration(i) * tc.gap
				dep, _ := s.arrive(at, 100)
				deps = append(deps, dep)
				delays = append(delays, dep-at)
			}
			lo, hi := slices.Min(delays), slices.Max(delays)
			if lo < delay-jitter || hi > delay+jitter+tc.gap {
				t.Errorf("delays within [%v, %v], want within [%v, %v]", lo, hi, delay-jitter, delay+jitter)
			}
			sorted := slices.IsSorted(deps)
			if sorted == tc.reorder {
				t.Errorf("departures in arrival order: %v; reordering allowed: %v", sorted, tc.reorder)
			}
			if tc.gap > 2*jitter {
				// Raw uniform draws: mean delay, spread 2·jitter/√12.
				var sum float64
				for _, d := range delays {
					sum += float64(d)
				}
				mean := time.Duration(sum / float64(len(delays)))
				if mean < delay-50*time.Microsecond || mean > delay+50*time.Microsecond {
					t.Errorf("mean delay %v, want %v", mean, delay)
				}
				if lo > delay-jitter+50*time.Microsecond || hi < delay+jitter-50*time.Microsecond {
					t.Errorf("delays only within [%v, %v], want the whole ±%v", lo, hi, jitter)
				}
			}
		})
	}
}

func TestPktQueue(t *testing.T) {
	var q pktQueue
	deps := []time.Duration{5, 3, 9, 3, 1, 7, 3}
	for i, d := range deps {
		q.Push(heldPacket{dep: d, seq: uint64(i), buf: []byte{byte(i)}})
	}
	var got []uint64
	for q.Len() > 0 {
		p := q.Pop()
		if len(p.buf) != 1 || p.buf[0] != byte(p.seq) {
			t.Errorf("packet %d popped with the bytes %v", p.seq, p.buf)
		}
		got = append(got, p.seq)
	}
	// By departure; ties (3, 3, 3) in arrival order 1, 3, 6.
	if want := []uint64{4, 1, 3, 6, 0, 5, 2}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
}

// tcp4 is a 1250-byte IPv4 TCP packet from 10.0.0.1:sport to 10.0.0.2:dport.
func tcp4(sport, dport uint16) []byte {
	p := make([]byte, 1250)
	p[0], p[9] = 0x45, 6
	copy(p[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	p[20], p[21], p[22], p[23] = byte(sport>>8), byte(sport), byte(dport>>8), byte(dport)
	return p
}

func TestShaperPerFlow(t *testing.T) {
	const ms = time.Millisecond
	// 10 Mbit/s per flow: 1250 bytes take 1 ms; each flow queues 5.
	p, err := Path{Delay: 5 * ms, FlowRateBitsPerSecond: 10_000_000, FlowQueueBytes: 5 * 1250}.withDefaults(1500)
	if err != nil {
		t.Fatal(err)
	}
	s := newShaper(p, 1, 1)
	a, b := tcp4(40000, 5201), tcp4(40001, 5201)
	at := func(now time.Duration, pkt []byte) time.Duration {
		dep, _, v := s.arriveWait(now, len(pkt), pkt)
		if v != forward {
			return -1
		}
		return dep
	}
	// A burst of six on one flow: five fit its queue, each a millisecond
	// after the one before; the sixth is dropped.
	var got []time.Duration
	for range 6 {
		got = append(got, at(0, a))
	}
	if want := []time.Duration{6 * ms, 7 * ms, 8 * ms, 9 * ms, 10 * ms, -1}; !slices.Equal(got, want) {
		t.Errorf("one flow's burst departs %v, want %v", got, want)
	}
	// Another flow at the same instant waits for nothing of the first's.
	if dep := at(0, b); dep != 6*ms {
		t.Errorf("a second flow's packet behind the first's full queue departs %v, want 6ms: each flow has its own queue", dep)
	}
	// Its reply direction, the same ports swapped, is a flow of its own too.
	if k, r := flowOf(a), flowOf(tcp4(5201, 40000)); k == r || k.sport != 40000 || k.dport != 5201 || k.proto != 6 {
		t.Errorf("flow keys %+v and %+v", k, r)
	}

	// N flows offered far above the rate carry N times one.
	s = newShaper(Path{FlowRateBitsPerSecond: 50_000_000, FlowQueueBytes: 1 << 30}, 1, 1)
	const n = 4000
	var last time.Duration
	for i := range n {
		pkt := tcp4(uint16(40000+i%4), 5201)
		dep, _, v := s.arriveWait(time.Duration(i), len(pkt), pkt)
		if v != forward {
			t.Fatalf("packet %d dropped", i)
		}
		last = max(last, dep)
	}
	if got := float64(n*1250*8) / last.Seconds(); math.Abs(got/200e6-1) > 1e-3 {
		t.Errorf("four flows at 50 Mbit/s each carried %.6g bit/s, want 200M", got)
	}
}

func TestFlowOf(t *testing.T) {
	frag := tcp4(1, 2)
	frag[7] = 0x10 // fragment offset 16: no ports in it
	v6 := make([]byte, 48)
	v6[0], v6[6] = 0x60, 17
	v6[23], v6[39] = 1, 2
	v6[40], v6[41], v6[42], v6[43] = 0x9c, 0x40, 0x14, 0x51
	tests := []struct {
		name string
		pkt  []byte
		want flowKey
	}{
		{"nothing", nil, flowKey{}},
		{"not IP", []byte{0x10, 1, 2, 3}, flowKey{}},
		{"IPv4 cut short", tcp4(1, 2)[:19], flowKey{}},
		{"IPv4 TCP", tcp4(40000, 5201), flowKey{proto: 6, src: [16]byte{10, 0, 0, 1}, dst: [16]byte{10, 0, 0, 2}, sport: 40000, dport: 5201}},
		{"IPv4 with options", func() []byte { p := tcp4(0, 0); p[0] = 0x46; p[24], p[25] = 0x9c, 0x40; return p }(),
			flowKey{proto: 6, src: [16]byte{10, 0, 0, 1}, dst: [16]byte{10, 0, 0, 2}, sport: 40000}},
		{"IPv4 later fragment", frag, flowKey{proto: 6, src: [16]byte{10, 0, 0, 1}, dst: [16]byte{10, 0, 0, 2}}},
		{"IPv6 UDP", v6, flowKey{proto: 17, src: [16]byte{15: 1}, dst: [16]byte{15: 2}, sport: 40000, dport: 5201}},
		{"IPv6 with no room for ports", v6[:42], flowKey{proto: 17, src: [16]byte{15: 1}, dst: [16]byte{15: 2}}},
	}
	for _, tc := range tests {
		if got := flowOf(tc.pkt); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestShaperForgetsIdleFlows: flows that have nothing queued or in flight
// are forgotten once there are many, so a long run of short connections
// keeps the shaper's memory bounded.
func TestShaperForgetsIdleFlows(t *testing.T) {
	s := newShaper(Path{FlowRateBitsPerSecond: 1e9, FlowQueueBytes: 1 << 20}, 1, 1)
	for i := range 5 * maxIdleFlows {
		pkt := tcp4(uint16(i), uint16(i>>16)+1)
		// One packet each, a millisecond apart: each flow idle by the next.
		if _, _, v := s.arriveWait(time.Duration(i)*time.Millisecond, len(pkt), pkt); v != forward {
			t.Fatalf("packet %d dropped", i)
		}
		if len(s.flows) > 2*maxIdleFlows {
			t.Fatalf("%d flows kept after %d connections, most of them idle", len(s.flows), i+1)
		}
	}
}
