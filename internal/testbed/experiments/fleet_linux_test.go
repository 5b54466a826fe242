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

// TestFleetWatchNamespaces (issue 29): narrows fleet watch on eight hosts
// behind one switch, watched from a ninth. The last sends at 8 Mbit/s
// (tbf on its device), so its round trips of a 64 KiB response take tens
// of milliseconds (36 ms here) against well under one on the others: each
// record names it the slowest link. The agent of the first is killed
// midway: from then on every record has it down, by name, the others up,
// their round trips going on at their pace. The summary has every link,
// the killed one with its last error.
func TestFleetWatchNamespaces(t *testing.T) {
	testbed.Share(t, 2)
	const hosts = 8
	from := make([]int64, hosts+1)
	from[hosts] = 8e6
	sw := testbed.NewTestSwitch(t, testbed.SwitchOptions{Hosts: hosts + 1, FromHost: from})
	var targets []string
	var agents []*itest.Agent
	for i, h := range sw.Hosts[1:] {
		agents = append(agents, itest.StartAgent(t, []string{"--listen", agentAt(h)}, inNS(h)...))
		targets = append(targets, fmt.Sprintf("db%d=%s", i+1, agentAt(h)))
	}
	killAt := 3 * time.Second
	timer := time.AfterFunc(killAt, func() { agents[0].Cmd.Process.Kill() })
	defer timer.Stop()
	start := time.Now()
	r := itest.RunWrapped(t, time.Minute, nil, inNS(sw.Hosts[0]), "fleet", "watch", "--targets", strings.Join(targets, ","),
		"--rate", "5", "--response", "64K", "--interval", "1s", "--duration", "7s", "--mtu-every", "0", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	var after, before int
	for _, l := range lines[:len(lines)-1] {
		var iv result.Interval
		if err := json.Unmarshal([]byte(l), &iv); err != nil {
			t.Fatalf("a record: %v: %s", err, l)
		}
		fw := iv.FleetWatch
		if fw == nil || fw.Links != hosts {
			t.Fatalf("a record without the fleet's %d links: %s", hosts, l)
		}
		end := iv.End.D()
		var slow []string
		for _, s := range fw.Slowest {
			slow = append(slow, fmt.Sprintf("%s %v", s.Name, s.P99.D()))
		}
		t.Logf("%v: %d up, %d down, %.0f round trips/s; slowest %s", end.Round(time.Millisecond), fw.Up, fw.Down, fw.Rate, strings.Join(slow, ", "))
		if len(fw.Slowest) == 0 || fw.Slowest[0].Name != fmt.Sprintf("db%d", hosts) {
			t.Errorf("at %v the slowest link is not db%d, which sends at 8 Mbit/s: %+v", end, hosts, fw.Slowest)
		}
		switch {
		case end < killAt-500*time.Millisecond && end > 1500*time.Millisecond:
			// Before the kill, the first records' dials aside: all up.
			before++
			if fw.Up != hosts {
				t.Errorf("at %v %d links up of %d, before any agent went", end, fw.Up, hosts)
			}
		case end > killAt+1500*time.Millisecond:
			after++
			if fw.Down != 1 || len(fw.DownLinks) != 1 || fw.DownLinks[0].Name != "db1" || fw.Up != hosts-1 {
				t.Errorf("at %v, after db1's agent was killed: %d up, down %+v", end, fw.Up, fw.DownLinks)
			}
			if fw.Rate < 0.8*5*(hosts-1) {
				t.Errorf("at %v the links still up made %.1f round trips/s, not their 5 each", end, fw.Rate)
			}
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("%d records before the kill and %d after, in %v: nothing to hold", before, after, time.Since(start))
	}
	var rep result.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil || rep.FleetWatch == nil {
		t.Fatalf("the summary: %v: %s", err, lines[len(lines)-1])
	}
	if len(rep.FleetWatch.Links) != hosts {
		t.Fatalf("the summary has %d links of %d", len(rep.FleetWatch.Links), hosts)
	}
	for _, l := range rep.FleetWatch.Links {
		if l.Watch == nil || l.Watch.RoundTrips == 0 {
			t.Errorf("%s: no round trips in the summary", l.Name)
		}
		if l.Name == "db1" && (l.Watch == nil || l.Watch.LastError == "") {
			t.Errorf("db1, whose agent was killed: no last error in the summary")
		}
	}
}
