package wakeup

import (
	"math"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// blocks makes a run's blocks: pairs as is / awake with these means (µs).
func blocks(pairs [][2]float64) []result.WakeupBlock {
	var b []result.WakeupBlock
	for _, p := range pairs {
		b = append(b, result.WakeupBlock{Awake: false, RoundTrips: 1000, Mean: result.Seconds(time.Duration(p[0] * 1e3))},
			result.WakeupBlock{Awake: true, RoundTrips: 1000, Mean: result.Seconds(time.Duration(p[1] * 1e3))})
	}
	return b
}

// TestJudge holds the verdict to what the pairs show: a real difference
// above the floor costs, one shown within the floor is free, and one the
// pairs cannot place either way is unjudged, whatever its mean.
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pairs [][2]float64
		want  string
	}{
		{"a steady 40 µs", [][2]float64{{53, 13}, {55, 13}, {52, 12}, {54, 13}}, result.WakeupCosts},
		{"nothing, steadily", [][2]float64{{13.1, 13}, {12.9, 13}, {13, 13.1}, {13.2, 13}}, result.WakeupFree},
		{"a large mean from one pair", [][2]float64{{13, 13}, {13, 13}, {90, 13}, {13, 13}}, result.WakeupUnjudged},
		{"real but below the floor", [][2]float64{{14, 13}, {14.1, 13}, {13.9, 13}, {14, 13}}, result.WakeupFree},
		{"straddling the floor", [][2]float64{{15, 13}, {17, 13}, {13.5, 13}, {16, 13}}, result.WakeupUnjudged},
		{"faster as is", [][2]float64{{8, 13}, {7, 13}, {8, 13}, {7.5, 13}}, result.WakeupUnjudged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &result.Wakeup{Blocks: blocks(tc.pairs)}
			judge(res)
			if res.Verdict != tc.want {
				t.Errorf("verdict %s, want %s (per wake %v ± %v, floor %v)", res.Verdict, tc.want, res.PerWake.D(), res.PerWakeMargin.D(), floor(res))
			}
		})
	}
}

// TestSettling: a block as is still under the after-effect of the block
// awake before it (narrows host on this project's VMs: 21.9 µs a round
// trip among 49-51) is marked and its pair not counted, so the figure is
// the machine's; where the medians show no cost, or half the blocks as
// is are fast, nothing is marked and the mean's interval judges.
func TestSettling(t *testing.T) {
	res := &result.Wakeup{Blocks: blocks([][2]float64{{49.6, 10.9}, {48.9, 10.9}, {21.9, 15.5}, {59.9, 10.7}})}
	if !judge(res) || res.Verdict != result.WakeupCosts {
		t.Fatalf("verdict %s", res.Verdict)
	}
	for i, b := range res.Blocks {
		if b.Settling != (i == 4) {
			t.Errorf("block %d (%v µs, awake %v) settling %v", i, b.Mean.D().Microseconds(), b.Awake, b.Settling)
		}
	}
	// (38.7 + 38.0 + 49.2) / 3 / 2, not the four pairs' 16.3 µs.
	if got, want := res.PerWake.D().Seconds()*1e6, (38.7+38.0+49.2)/3/2; math.Abs(got-want) > 0.01 {
		t.Errorf("per wake %.2f µs, want %.2f", got, want)
	}
	if got := res.AsIs.D().Seconds() * 1e6; math.Abs(got-(49.6+48.9+59.9)/3) > 0.01 {
		t.Errorf("as is %.2f µs: the settling block counted", got)
	}
	for _, tc := range []struct {
		name  string
		pairs [][2]float64
	}{
		{"one pair, no cost by the medians", [][2]float64{{13, 13}, {13, 13}, {90, 13}, {13, 13}}},
		{"half fast", [][2]float64{{50, 11}, {21, 11}, {52, 11}, {22, 11}}},
		{"two pairs", [][2]float64{{50, 11}, {21, 11}}},
		{"faster as is", [][2]float64{{8, 13}, {7, 13}, {8, 13}, {7.5, 13}}},
	} {
		res := &result.Wakeup{Blocks: blocks(tc.pairs)}
		judge(res)
		for i, b := range res.Blocks {
			if b.Settling {
				t.Errorf("%s: block %d marked settling", tc.name, i)
			}
		}
	}
	// A mark is the run's latest judgement: more pairs may clear it.
	res = &result.Wakeup{Blocks: blocks([][2]float64{{50, 11}, {30, 11}, {52, 11}})}
	judge(res)
	if !res.Blocks[2].Settling {
		t.Fatal("30 µs among 50 and 52 not marked")
	}
	res.Blocks = append(res.Blocks, blocks([][2]float64{{29, 11}, {31, 11}})...)
	judge(res)
	if res.Blocks[2].Settling {
		t.Error("30 µs still marked among 29-52, the median now 31")
	}
}

// TestDisturbed: a block awake that something else held (the agent's
// side of a run here: 84.4 µs awake among 11.3-13.6) is marked and its
// pair not counted; a block awake within the blocks' scatter, or below
// the midpoint, is not.
func TestDisturbed(t *testing.T) {
	pairs := [][2]float64{{54.2, 12.0}, {56.8, 12.2}, {65.3, 13.6}, {61.1, 84.4}, {57.0, 12.5}, {59.9, 12.3}}
	res := &result.Wakeup{Blocks: blocks(pairs)}
	if !judge(res) || res.Verdict != result.WakeupCosts {
		t.Fatalf("verdict %s", res.Verdict)
	}
	for i, b := range res.Blocks {
		if b.Disturbed != (i == 7) || b.Settling {
			t.Errorf("block %d (%v µs, awake %v) disturbed %v, settling %v", i, b.Mean.D().Microseconds(), b.Awake, b.Disturbed, b.Settling)
		}
	}
	var sum float64
	for i, p := range pairs {
		if i != 3 {
			sum += p[0] - p[1]
		}
	}
	if got, want := res.PerWake.D().Seconds()*1e6, sum/5/2; math.Abs(got-want) > 0.01 {
		t.Errorf("per wake %.2f µs, want %.2f (the disturbed pair left out)", got, want)
	}
	if got := res.Awake.D().Seconds() * 1e6; got > 13 {
		t.Errorf("awake %.2f µs: the disturbed block counted", got)
	}
	for _, tc := range []struct {
		name  string
		pairs [][2]float64
	}{
		{"awake a little slow, below the midpoint", [][2]float64{{54, 12}, {56, 12.2}, {55, 30}, {57, 12.1}}},
		{"half slow", [][2]float64{{54, 12}, {56, 50}, {55, 12}, {57, 52}}},
		{"no cost by the medians", [][2]float64{{13, 13}, {13, 13}, {13, 90}, {13, 13}}},
	} {
		res := &result.Wakeup{Blocks: blocks(tc.pairs)}
		judge(res)
		for i, b := range res.Blocks {
			if b.Disturbed {
				t.Errorf("%s: block %d marked disturbed", tc.name, i)
			}
		}
	}
}

func TestMeanCI(t *testing.T) {
	m, h := metric.MeanCI([]float64{1, 2, 3, 4})
	// sd = 1.291, t(3) = 3.182: 3.182 × 1.291 / 2 = 2.054
	if m != 2.5 || math.Abs(h-2.054) > 0.001 {
		t.Errorf("MeanCI = %v ± %v, want 2.5 ± 2.054", m, h)
	}
	if _, h := metric.MeanCI([]float64{1}); !math.IsInf(h, 1) {
		t.Errorf("one value: ± %v, want infinite", h)
	}
}

// TestJudgeBusy: blocks that would show a clear cost are not judged when
// other work took more than maxOthers of the machine's CPU time in the
// median block as is (the cost is then that work's); a machine as quiet
// as maxOthers, or one whose share could not be read, is judged.
func TestJudgeBusy(t *testing.T) {
	costly := [][2]float64{{53, 13}, {55, 13}, {52, 12}, {54, 13}}
	for _, tc := range []struct {
		name   string
		others []float64 // per block as is; nil: not read
		want   string
	}{
		{"busy", []float64{0.3, 0.35, 0.32, 0.4}, result.WakeupUnjudged},
		{"busy in most blocks", []float64{0.02, 0.3, 0.35, 0.32}, result.WakeupUnjudged},
		{"quiet", []float64{0.01, 0.02, 0.015, 0.03}, result.WakeupCosts},
		{"busy in one block", []float64{0.01, 0.5, 0.015, 0.03}, result.WakeupCosts},
		{"not read", nil, result.WakeupCosts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &result.Wakeup{Blocks: blocks(costly)}
			for i, o := range tc.others {
				res.Blocks[2*i].Others = &o
			}
			judge(res)
			if res.Verdict != tc.want {
				t.Errorf("verdict %s, want %s (others in the median block as is %.2f)", res.Verdict, tc.want, busy(res.Blocks))
			}
		})
	}
}
