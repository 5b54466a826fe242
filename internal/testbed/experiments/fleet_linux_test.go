//go:build linux

package experiments

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// TestFleetHundredAgents (issue 29): one client drives 100 agents on this
// machine, each with a directory of its own, through one short disk test
// started together. The start's skew is measured by the agents' own
// clocks (each says when it began, its offset to the client's clock taken
// off): every host must run, none may begin before the instant (beyond a
// millisecond of clock error), and the client's memory (its peak RSS,
// from the kernel's account of the process) is bounded; the start's
// spread and the run's overhead (its wall time less the test's duration)
// are stated. Issue 29's goal, the median host within 5 ms of the
// instant, is not held here: 100 agents on this machine's two cores wake
// at the instant one after another (four runs: 8.5-19 ms at the median,
// 108-242 ms the last), which hosts of their own would not.
func TestFleetHundredAgents(t *testing.T) {
	testbed.Share(t, testbed.Slots)
	const hosts = 100
	var on []string
	for range hosts {
		a := itest.StartAgent(t, []string{"--disk-path", t.TempDir()})
		on = append(on, a.Addr)
	}
	const d = 500 * time.Millisecond
	start := time.Now()
	r := itest.Run(t, 5*time.Minute, nil, "fleet", "disk", "--on", strings.Join(on, ","), "--rw", "randread", "--block", "4K",
		"--duration", d.String(), "--size", "1M", "--timeout", "10s", "--json")
	took := time.Since(start)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	var rep result.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatal(err)
	}
	f := rep.Fleet
	if f == nil || f.Start == nil || f.Start.Hosts != hosts || len(f.Patterns) != 1 || f.Patterns[0].Hosts != hosts {
		t.Fatalf("not all %d hosts began and ran: %+v", hosts, f)
	}
	var rss int64
	if ru, ok := r.Usage.(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10
	}
	t.Logf("%d agents: began %v after the instant at the median, %v at most, skew %v; the client's peak RSS %.1f MiB; the run took %v for a test of %v (%v over)",
		hosts, f.Start.MedianAfter.D(), f.Start.MaxAfter.D(), f.Start.Skew.D(), float64(rss)/(1<<20), took.Round(time.Millisecond), d, (took - d).Round(time.Millisecond))
	// The agents share this host's clock: each offset read is the start
	// mechanism's own error, and the probe's round trip bounds it.
	var offs []float64
	for _, h := range f.Hosts {
		if h.StartedAfter == nil || h.StartedAfter.D() < -time.Millisecond {
			t.Errorf("%s began %v after the instant: before it, or not at all", h.Name, h.StartedAfter)
		}
		if h.ClockRTT <= 0 {
			t.Errorf("%s: no clock probe's round trip", h.Name)
			continue
		}
		offs = append(offs, h.ClockOffset.D().Abs().Seconds())
		if off, rtt := h.ClockOffset.D().Abs(), h.ClockRTT.D(); off > rtt/2+time.Millisecond {
			t.Errorf("%s: its clock read %v from this host's, its own, over a %v round trip", h.Name, off, rtt)
		}
	}
	slices.Sort(offs)
	t.Logf("the clock offsets read (all truly 0): %v at the median, %v at most", time.Duration(offs[len(offs)/2]*1e9), time.Duration(offs[len(offs)-1]*1e9))
	if rss == 0 {
		t.Fatal("the client's peak RSS was not read")
	}
	if rss > 256<<20 {
		t.Errorf("the client held %s at its peak for %d hosts", fmt.Sprintf("%.0f MiB", float64(rss)/(1<<20)), hosts)
	}
}
