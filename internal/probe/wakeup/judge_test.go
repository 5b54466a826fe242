package wakeup

import (
	"math"
	"testing"
	"time"

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

func TestMeanCI(t *testing.T) {
	m, h := meanCI([]float64{1, 2, 3, 4})
	// sd = 1.291, t(3) = 3.182: 3.182 × 1.291 / 2 = 2.054
	if m != 2.5 || math.Abs(h-2.054) > 0.001 {
		t.Errorf("meanCI = %v ± %v, want 2.5 ± 2.054", m, h)
	}
	if _, h := meanCI([]float64{1}); !math.IsInf(h, 1) {
		t.Errorf("one value: ± %v, want infinite", h)
	}
}
