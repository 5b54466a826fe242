package stream

import (
	"testing"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// TestSplitStartup: slow start's burst of losses is the start-up; loss
// that goes on is the steady state's, however long it has gone on.
func TestSplitStartup(t *testing.T) {
	ivs := func(retrans ...int64) []ivTCP {
		var out []ivTCP
		for i, r := range retrans {
			out = append(out, ivTCP{end: time.Duration(i+1) * time.Second, span: time.Second, retrans: r, sent: 1e6, bytesRetrans: r * 1000})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		ivs           []ivTCP
		startupEnd    time.Duration
		startup       int64
		steady, lossy int
		ratio         float64
	}{
		{"one burst in the first second", ivs(1596, 0, 0, 0, 0, 0, 0, 0), time.Second, 1596, 7, 0, 0},
		{"a burst in the second second (a longer path's slow start)", ivs(0, 900, 3, 0, 0, 0, 0, 0), 3 * time.Second, 903, 5, 0, 0},
		{"a clean run: the first second is the ramp", ivs(0, 0, 0, 0), time.Second, 0, 3, 0, 0},
		{"loss all along: the start-up stops at half the run", ivs(50, 20, 20, 20, 20, 20, 20, 20), 4 * time.Second, 110, 4, 4, 0.02},
		{"a sawtooth's single loss later on", ivs(1500, 0, 0, 0, 0, 7, 0, 0), time.Second, 1500, 7, 1, 7000.0 / 7e6},
		// An agent that dripped its reports with no time between them
		// (the hostile agent's Drip): unsplit, and no panic.
		{"reports with no time between them", []ivTCP{{retrans: 1}, {retrans: 2}, {retrans: 3}}, 0, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s result.TCPSummary
			splitStartup(&s, tc.ivs)
			if s.StartupEnd.D() != tc.startupEnd || s.StartupRetransmits != tc.startup || s.SteadyIntervals != tc.steady || s.SteadyLossIntervals != tc.lossy {
				t.Errorf("start-up to %v with %d retransmits, steady %d intervals (%d lossy); want %v, %d, %d (%d)",
					s.StartupEnd.D(), s.StartupRetransmits, s.SteadyIntervals, s.SteadyLossIntervals, tc.startupEnd, tc.startup, tc.steady, tc.lossy)
			}
			if d := s.SteadyRetransRatio - tc.ratio; d > 1e-9 || d < -1e-9 {
				t.Errorf("steady ratio %v, want %v", s.SteadyRetransRatio, tc.ratio)
			}
		})
	}
	// Too short to leave two steady intervals: not split.
	var s result.TCPSummary
	splitStartup(&s, ivs(100, 0))
	if s.SteadyIntervals != 0 || s.StartupEnd != 0 {
		t.Errorf("a two-interval run split: %+v", s)
	}
	// A closing stretch shorter than half an interval is not an interval.
	short := append(ivs(100, 0, 0), ivTCP{end: 3200 * time.Millisecond, span: 200 * time.Millisecond, retrans: 1, sent: 1e5, bytesRetrans: 1000})
	s = result.TCPSummary{}
	splitStartup(&s, short)
	if s.SteadyIntervals != 2 || s.SteadyLossIntervals != 0 {
		t.Errorf("the closing stretch counted: %+v", s)
	}
}

// TestLeanKeepsNoIntervals: one host of a fleet (Held: the accumulator
// lean) keeps nothing per interval, however long the run, where one
// stream's run keeps each interval's counters for its start-up split;
// both count the run's retransmits.
func TestLeanKeepsNoIntervals(t *testing.T) {
	for _, lean := range []bool{false, true} {
		e := &endpoint{dc: client.DataConn{Slot: wire.Slot{ID: 0, Role: wire.SlotSource}}}
		a := newAccumulator(result.PhaseSingle, 1, []*endpoint{e})
		a.lean = lean
		const n = 10000
		for i := range n {
			e.count.Add(1 << 20)
			a.interval(&wire.Interval{Index: i, Elapsed: time.Duration(i+1) * time.Second,
				Slots: []wire.SlotSample{{Slot: 0, Bytes: int64(i+1) << 20, TCP: &sysinfo.TCPInfo{RTT: time.Millisecond, Retransmits: int64(i), BytesSent: int64(i+1) << 20}}}})
		}
		kept := len(a.dirs[0].ivs)
		if lean && kept != 0 || !lean && kept != n {
			t.Errorf("lean %v: %d intervals kept of %d", lean, kept, n)
		}
		runs := a.summary(&wire.Done{Elapsed: n * time.Second, Slots: []wire.SlotSample{{Slot: 0, Bytes: n << 20, TCP: &sysinfo.TCPInfo{Retransmits: n - 1, BytesSent: n << 20, MSS: 1448}}}}, result.CPU{})
		if len(runs) != 1 || runs[0].TCP == nil || runs[0].TCP.Retransmits != n-1 {
			t.Errorf("lean %v: %+v", lean, runs)
		}
	}
}
