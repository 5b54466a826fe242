package rr

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestJudgeCoalescing: the pairs' differences decide as the wake-up
// experiment's do: a cost when their interval is above zero and their
// mean above the floor (2 µs, or 2% of the round trip at the least),
// free when the interval lies within ± the floor, else unjudged.
func TestJudgeCoalescing(t *testing.T) {
	blocks := func(pairs ...[2]float64) []result.CoalescingBlock {
		var b []result.CoalescingBlock
		for i, p := range pairs {
			asis, least := result.CoalescingBlock{P50: result.Seconds(time.Duration(p[0] * 1e3))}, result.CoalescingBlock{Least: true, P50: result.Seconds(time.Duration(p[1] * 1e3))}
			if i%2 == 1 { // run at the least first, as TryCoalescing does
				b = append(b, least, asis)
				continue
			}
			b = append(b, asis, least)
		}
		return b
	}
	for _, c := range []struct {
		name    string
		pairs   [][2]float64 // µs: as is, at the least
		verdict string
		decided bool
	}{
		{"a clear cost", [][2]float64{{260, 205}, {262, 204}, {259, 206}, {261, 205}}, result.CoalescingCosts, true},
		{"nothing", [][2]float64{{1030, 1031}, {1029, 1030}, {1031, 1029}, {1030, 1030}}, result.CoalescingFree, true},
		{"below the floor, clearly", [][2]float64{{101, 100}, {101, 100}, {101, 100}, {101, 100}}, result.CoalescingFree, true},
		{"noise", [][2]float64{{300, 200}, {200, 300}, {320, 180}, {190, 310}}, result.CoalescingUnjudged, false},
		{"one pair", [][2]float64{{260, 205}}, result.CoalescingUnjudged, false},
		{"a cost, its margin still wide", [][2]float64{{1100, 1040}, {1110, 1045}, {1090, 1045}, {1105, 1030}}, result.CoalescingUnjudged, false},
		{"a steady drift, both orders (at the last pair)", [][2]float64{{1050, 1025}, {1125, 1050}, {1150, 1125}, {1225, 1150}}, result.CoalescingCosts, true},
	} {
		try := &result.CoalescingTry{Blocks: blocks(c.pairs...)}
		if got := judgeCoalescing(try, strings.Contains(c.name, "at the last pair")); got != c.decided || try.Verdict != c.verdict {
			t.Errorf("%s: %v %s (gain %v ± %v), want %v %s", c.name, got, try.Verdict, try.Gain, try.Margin, c.decided, c.verdict)
		}
	}
}

// TestJudgeCoalescingLast: at the last pair a cost beyond noise and the
// floor is said whatever its margin.
func TestJudgeCoalescingLast(t *testing.T) {
	var b []result.CoalescingBlock
	for _, p := range [][2]float64{{1100, 1040}, {1110, 1045}, {1090, 1045}, {1105, 1030}} {
		b = append(b, result.CoalescingBlock{P50: result.Seconds(time.Duration(p[0] * 1e3))}, result.CoalescingBlock{Least: true, P50: result.Seconds(time.Duration(p[1] * 1e3))})
	}
	try := &result.CoalescingTry{Blocks: b}
	if !judgeCoalescing(try, true) || try.Verdict != result.CoalescingCosts {
		t.Fatalf("%s, want costs at the last pair (gain %v ± %v)", try.Verdict, try.Gain, try.Margin)
	}
}
