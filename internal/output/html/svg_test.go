package html

import (
	"regexp"
	"testing"
)

var tickRe = regexp.MustCompile(`<text class="tick" x="\d+" y="[\d.]+" text-anchor="end">([^<]*)</text>`)

// TestLineChartTicksDistinct: the y-axis ticks of a line chart each read
// differently, whatever the data: db repl's queue of nothing read
// "1 B, 0 B, 0 B, 0 B, 0 B, 0 B" (issue 25, defect 12).
func TestLineChartTicksDistinct(t *testing.T) {
	for _, c := range []struct {
		name string
		ys   []float64
		yfmt func(float64) string
	}{
		{"a queue of nothing", []float64{0, 0, 0}, byteTick},
		{"a queue of a byte", []float64{0, 1, 0}, byteTick},
		{"three bytes", []float64{3, 2, 1}, byteTick},
		{"a rate", []float64{288e6, 290e6}, bitRateTick},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pts []point
			for i, y := range c.ys {
				pts = append(pts, point{float64(i), y})
			}
			svg := string(lineChart("x", "c", "t", []series{{name: "s", pts: pts}}, nil, c.yfmt))
			seen := map[string]bool{}
			ticks := tickRe.FindAllStringSubmatch(svg, -1)
			if len(ticks) != lineChartTickCount+1 {
				t.Fatalf("%d ticks, want %d", len(ticks), lineChartTickCount+1)
			}
			for _, m := range ticks {
				if seen[m[1]] {
					t.Errorf("tick %q twice: %q", m[1], ticks)
				}
				seen[m[1]] = true
			}
		})
	}
}
