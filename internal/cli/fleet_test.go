package cli_test

import (
	"encoding/json"
	"math"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
)

// TestFleetDisk: four agents, each with its own directory, and one
// address where nothing answers: the four run the data profile together
// (each began after the instant, within a second of it), the fleet's
// figures are their sums, and the fifth is reported with why; nothing is
// left in any directory.
func TestFleetDisk(t *testing.T) {
	var on, dirs []string
	for range 4 {
		dir := t.TempDir()
		a := itest.StartAgent(t, []string{"--disk-path", dir})
		on, dirs = append(on, a.Addr), append(dirs, dir)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	on = append(on, gone)
	r := itest.Run(t, 2*time.Minute, nil, "fleet", "disk", "--on", strings.Join(on, ","), "--profile", "data",
		"--duration", "300ms", "--size", "8M", "--timeout", "3s", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	var rep result.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatal(err)
	}
	f := rep.Fleet
	if f == nil || len(f.Hosts) != 5 {
		t.Fatalf("no fleet of five: %s", lines[len(lines)-1])
	}
	for i, h := range f.Hosts[:4] {
		if h.Error != "" || h.Disk == nil || h.StartedAfter == nil {
			t.Fatalf("host %d: %+v", i, h)
		}
		if a := h.StartedAfter.D(); a < -time.Millisecond || a > time.Second {
			t.Errorf("host %d began %v after the instant", i, a)
		}
	}
	if h := f.Hosts[4]; h.Error == "" || h.Disk != nil {
		t.Errorf("the address where nothing answers: %+v", h)
	}
	if f.Start == nil || f.Start.Hosts != 4 {
		t.Errorf("start: %+v", f.Start)
	}
	t.Logf("start: %+v", *f.Start)
	for i, p := range f.Patterns {
		var sum float64
		for _, h := range f.Hosts[:4] {
			sum += h.Disk.Patterns[i].IOPS
		}
		if p.Hosts != 4 || sum <= 0 || math.Abs(p.IOPS-sum) > 0.01*sum {
			t.Errorf("%s: the fleet's %g IOPS over %d hosts, the hosts' sum %g", p.Name, p.IOPS, p.Hosts, sum)
		}
		// The pooled I/Os' p99 lies between the hosts' own p99s (a
		// mixture's quantile lies between its parts'), read at most the
		// coarsening's precision high.
		lo, hi := math.Inf(1), 0.0
		for _, h := range f.Hosts[:4] {
			lo, hi = min(lo, float64(h.Disk.Patterns[i].P99)), max(hi, float64(h.Disk.Patterns[i].P99))
		}
		if p.Latency == nil || len(p.HistogramsMissing) > 0 {
			t.Fatalf("%s: no merged latency: %v", p.Name, p.HistogramsMissing)
		}
		if got := float64(p.Latency.P99); got < lo || got > hi*(1+p.Precision+0.001) {
			t.Errorf("%s: the fleet's p99 %v outside the hosts' %v..%v (precision %.1f%%)", p.Name, p.Latency.P99.D(), time.Duration(lo), time.Duration(hi), 100*p.Precision)
		}
	}
	for _, d := range dirs {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Errorf("left in %s: %v", d, left)
		}
	}
}
