package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestFleetKnees: a sweep's words from its curve: the knee and the step
// after it, a knee at the deepest step, a deeper step that held with
// fewer IOPS, no step held, and steps without a merged latency (not
// judged: neither knee nor miss).
func TestFleetKnees(t *testing.T) {
	slo := &result.FleetSLO{Name: "p99", Quantile: 0.99, Bound: result.Seconds(2 * time.Millisecond)}
	curve := func(knee int, steps ...[2]float64) result.FleetCurve {
		c := result.FleetCurve{Shape: "randread 8 KiB"}
		for i, s := range steps {
			pt := result.FleetPoint{QD: 1 << i, Pattern: i, Hosts: 4, IOPS: s[0]}
			if s[1] > 0 {
				v := result.Seconds(time.Duration(s[1] * 1e9))
				held := v <= slo.Bound
				pt.Latency, pt.Held = &v, &held
			}
			c.Points = append(c.Points, pt)
		}
		if knee >= 0 {
			c.Knee = &knee
		}
		return c
	}
	fleetOf := func(c result.FleetCurve) *result.Fleet {
		f := &result.Fleet{Sweep: &result.FleetSweep{SLO: slo, Curves: []result.FleetCurve{c}}}
		for range 4 {
			f.Hosts = append(f.Hosts, result.FleetHost{Disk: &result.Disk{}})
		}
		return f
	}
	for _, c := range []struct {
		name     string
		curve    result.FleetCurve
		code     string
		contains []string
	}{
		{"the knee, then over", curve(1, [2]float64{40000, 0.0004}, [2]float64{60000, 0.0011}, [2]float64{70000, 0.0035}), "fleet.knee",
			[]string{"within p99 ≤ 2.00 ms", "60,000 IOPS in total at queue depth 2 on each host (15,000 a host), p99 1.10 ms; at queue depth 4, 3.50 ms"}},
		{"held to the deepest", curve(2, [2]float64{40000, 0.0004}, [2]float64{60000, 0.0006}, [2]float64{70000, 0.0009}), "fleet.knee",
			[]string{"70,000 IOPS in total at queue depth 4", "held at every depth swept: the knee lies deeper, sweep further"}},
		{"a deeper step held with fewer", curve(1, [2]float64{40000, 0.0004}, [2]float64{71000, 0.0006}, [2]float64{70000, 0.0009}), "fleet.knee",
			[]string{"71,000 IOPS in total at queue depth 2", "queue depth 4 held it too, with fewer IOPS"}},
		{"none held", curve(-1, [2]float64{40000, 0.0031}, [2]float64{60000, 0.0042}), "fleet.slo_missed",
			[]string{"No step held p99 ≤ 2.00 ms with all 4 hosts", "at queue depth 1 on each host, the fleet's p99 was 3.10 ms"}},
		{"none judged", curve(-1, [2]float64{40000, 0}, [2]float64{60000, 0}), "", nil},
	} {
		fs := knees(fleetOf(c.curve))
		if c.code == "" {
			if len(fs) != 0 {
				t.Errorf("%s: %v, want nothing", c.name, fs)
			}
			continue
		}
		if len(fs) != 1 || fs[0].Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, fs, c.code)
			continue
		}
		for _, w := range c.contains {
			if !strings.Contains(fs[0].Summary, w) {
				t.Errorf("%s: %q lacks %q", c.name, fs[0].Summary, w)
			}
		}
	}
	// Without an objective there is no knee to speak of.
	f := fleetOf(curve(-1, [2]float64{40000, 0}))
	f.Sweep.SLO = nil
	if fs := knees(f); len(fs) != 0 {
		t.Errorf("no objective: %v", fs)
	}
}
