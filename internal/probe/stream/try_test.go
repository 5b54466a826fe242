package stream

import (
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// TestJudgeTry: a try's verdict from its pairs' ratios (tried / as is),
// on their logarithms' 95% interval, as printed to two decimals.
func TestJudgeTry(t *testing.T) {
	pairs := func(ratios ...float64) *result.TryGain {
		g := &result.TryGain{}
		for _, r := range ratios {
			g.Pairs = append(g.Pairs, result.TryPair{AsIs: 1e9, Tried: r * 1e9})
		}
		return g
	}
	for _, c := range []struct {
		name    string
		ratios  []float64
		judged  bool
		verdict string
		ratio   float64
	}{
		{"none yet", nil, false, result.TryUnjudged, 0},
		{"one pair is never judged", []float64{1.5}, false, result.TryUnjudged, 1.5},
		{"a clear gain", []float64{1.45, 1.52, 1.48}, true, result.TryHelped, 1.48},
		{"clearly none", []float64{1.01, 0.99, 1.02}, true, result.TryNoGain, 1.01},
		{"slower is none", []float64{0.8, 0.82, 0.79}, true, result.TryNoGain, 0.80},
		// Real (the interval above 1×) but under 1.1×: not a gain; its
		// top is over 1.1×, so not clearly none either.
		{"real, and small", []float64{1.05, 1.12, 1.07, 1.09}, false, result.TryUnjudged, 1.08},
		// Over 1.1× on the mean, the runs as scattered as the gain.
		{"scattered", []float64{1.5, 0.95, 1.3}, false, result.TryUnjudged, 1.23},
		// Two pairs: Student's t of 12.7 keeps all but the steadiest
		// unjudged.
		{"two steady pairs", []float64{1.50, 1.51}, true, result.TryHelped, 1.50},
		{"two pairs apart", []float64{1.3, 1.6}, false, result.TryUnjudged, 1.44},
	} {
		g := pairs(c.ratios...)
		judged := judgeTry(g)
		if judged != c.judged || g.Verdict != c.verdict || g.Ratio != c.ratio {
			t.Errorf("%s: judged %v %s %.2f (%.2f-%.2f), want %v %s %.2f", c.name, judged, g.Verdict, g.Ratio, g.RatioLow, g.RatioHigh, c.judged, c.verdict, c.ratio)
		}
		if len(c.ratios) >= 2 && !(g.RatioLow <= g.Ratio && g.Ratio <= g.RatioHigh) {
			t.Errorf("%s: %.2f outside its interval %.2f-%.2f", c.name, g.Ratio, g.RatioLow, g.RatioHigh)
		}
	}
	// The bound as printed: a mean that prints 1.10 with its interval
	// above 1× is a gain.
	g := pairs(1.0996, 1.0996, 1.0996)
	if !judgeTry(g) || g.Verdict != result.TryHelped {
		t.Errorf("1.0996 three times: %s %.2f (%.2f-%.2f)", g.Verdict, g.Ratio, g.RatioLow, g.RatioHigh)
	}
}
