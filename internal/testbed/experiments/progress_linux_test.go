//go:build linux

package experiments

import (
	"math"
	"testing"
)

// TestProgressLatencies: pgbench -P's lines are read as one client's, a
// line whose latency and rate disagree (as a CI-like run's 1.0 µs among
// 72 did) left out.
func TestProgressLatencies(t *testing.T) {
	out := "progress: 1.0 s, 15329.6 tps, lat 0.065 ms stddev 0.021, 0 failed\n" +
		"progress: 2.0 s, 13888.9 tps, lat 0.001 ms stddev 0.021, 0 failed\n" +
		"progress: 3.0 s, 49800.0 tps, lat 0.020 ms stddev 0.002, 0 failed\n"
	got := progressLatencies(out)
	if len(got) != 2 || math.Abs(got[0]-65e-6) > 1e-9 || math.Abs(got[1]-20e-6) > 1e-9 {
		t.Fatalf("progressLatencies = %v, want [65µs 20µs]", got)
	}
}
