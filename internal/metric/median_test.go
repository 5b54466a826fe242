package metric

import (
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	xs := []float64{5, 1, 3}
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{xs, 3}, {[]float64{4, 1, 3, 2}, 2.5}, {nil, 0}} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if !slices.Equal(xs, []float64{5, 1, 3}) {
		t.Errorf("Median sorted its argument: %v", xs)
	}
}
