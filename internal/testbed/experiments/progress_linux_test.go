//go:build linux

package experiments

import (
	"math"
	"testing"
)

// TestProgressLatencies: pgbench -P's lines are read as one client's:
// 1/tps a transaction, whatever its latency column says (0.000 ms at 44k
// tps with the CPUs kept awake here, 0.001 among 0.065 as is).
func TestProgressLatencies(t *testing.T) {
	out := "progress: 1.0 s, 15329.6 tps, lat 0.065 ms stddev 0.021, 0 failed\n" +
		"progress: 2.0 s, 13888.9 tps, lat 0.001 ms stddev 0.021, 0 failed\n" +
		"progress: 3.0 s, 43996.4 tps, lat 0.000 ms stddev 0.019, 0 failed\n" +
		"progress: 4.0 s, 0.0 tps, lat 0.000 ms stddev 0.000, 0 failed\n"
	got := progressLatencies(out)
	want := []float64{1 / 15329.6, 1 / 13888.9, 1 / 43996.4}
	if len(got) != len(want) {
		t.Fatalf("progressLatencies = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("progressLatencies = %v, want %v", got, want)
		}
	}
}
