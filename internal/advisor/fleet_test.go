package advisor

import (
	"slices"
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

// TestFleetNamesHosts: the findings that single hosts out carry their
// names (the rows a report marks), every one and only those; the
// findings that single none out carry none.
func TestFleetNamesHosts(t *testing.T) {
	disk := func(iops ...float64) *result.Fleet {
		f := &result.Fleet{}
		fp := result.FleetPattern{Name: "randread 8 KiB QD8", MedianP99: result.Seconds(time.Millisecond)}
		var all []float64
		for i, v := range iops {
			p := result.DiskPattern{Name: fp.Name, IOPS: v, IOs: 1000}
			p.P99 = result.Seconds(time.Millisecond)
			f.Hosts = append(f.Hosts, result.FleetHost{Name: "db" + string(rune('1'+i)), Disk: &result.Disk{Patterns: []result.DiskPattern{p}}})
			fp.Hosts++
			fp.IOPS += v
			all = append(all, v)
		}
		slices.Sort(all)
		fp.MedianIOPS = all[len(all)/2]
		f.Patterns = []result.FleetPattern{fp}
		return f
	}
	net := func(rates ...float64) *result.FleetNet {
		f := &result.FleetNet{Config: result.FleetNetConfig{StreamsPerHost: 1}}
		all := slices.Clone(rates)
		slices.Sort(all)
		med := all[len(all)/2]
		for i, r := range rates {
			f.Hosts = append(f.Hosts, result.FleetNetHost{Name: "r" + string(rune('1'+i)), Interface: "eth0",
				Stream: &result.StreamRun{Throughput: r}, Share: r / med})
			f.Total.Hosts++
			f.Total.Throughput += r
		}
		f.Total.MedianHost = med
		f.Links = []result.FleetNetLink{{Interface: "eth0", Hosts: len(rates), Rate: 10e9, WireThroughput: f.Total.Throughput, Share: f.Total.Throughput / 10e9}}
		return f
	}
	for _, c := range []struct {
		name  string
		fs    []result.Finding
		code  string
		hosts []string
	}{
		{"a disk far below", fleet(disk(10000, 10100, 3000, 9900)), "fleet.outlier", []string{"db3"}},
		{"two disks far below", fleet(disk(2000, 10100, 3000, 9900, 10000)), "fleet.outlier", []string{"db1", "db3"}},
		{"an even fleet", fleet(disk(10000, 10100, 9800, 9900)), "fleet.even", nil},
		{"a weak path", fleetNet(net(900e6, 300e6, 910e6)), "fleetnet.weak_path", []string{"r2"}},
		{"even replicas", fleetNet(net(900e6, 880e6, 910e6)), "fleetnet.even", nil},
	} {
		i := slices.IndexFunc(c.fs, func(f result.Finding) bool { return f.Code == c.code })
		if i < 0 {
			t.Errorf("%s: no %s in %v", c.name, c.code, c.fs)
			continue
		}
		if !slices.Equal(c.fs[i].Hosts, c.hosts) {
			t.Errorf("%s: %s names %q, want %q", c.name, c.code, c.fs[i].Hosts, c.hosts)
		}
		for _, f := range c.fs {
			if f.Severity != "warning" && len(f.Hosts) > 0 {
				t.Errorf("%s: %s names hosts %q", c.name, f.Code, f.Hosts)
			}
		}
	}
}
