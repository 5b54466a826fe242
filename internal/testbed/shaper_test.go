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
		q.Push(heldPacket{dep: d, seq: uint64(i)})
	}
	var got []uint64
	for q.Len() > 0 {
		got = append(got, q.Pop().seq)
	}
	// By departure; ties (3, 3, 3) in arrival order 1, 3, 6.
	if want := []uint64{4, 1, 3, 6, 0, 5, 2}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
}
