package cli_test

import (
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/metric"
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
	// The run is whole for the four, but not for the fleet asked for:
	// exit 1, the dead host named on standard error.
	if r.Code != 1 || !strings.Contains(r.Stderr, "1 of the fleet's 5 hosts gave no figures, or not all; the first, "+gone+": ") {
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

// TestFleetDiskSweep: three agents stepped through two queue depths
// together: a curve of two steps, each the fleet's pattern at that depth;
// with an objective every step holds, the knee is the step with the most
// IOPS and narrows says fleet.knee; with one no step can hold, there is
// no knee and it says fleet.slo_missed. The table draws the curve.
func TestFleetDiskSweep(t *testing.T) {
	var on []string
	for range 3 {
		a := itest.StartAgent(t, []string{"--disk-path", t.TempDir()})
		on = append(on, a.Addr)
	}
	sweep := func(slo string, asJSON bool) itest.Result {
		args := []string{"fleet", "disk", "--on", strings.Join(on, ","), "--rw", "randread", "--block", "8K", "--sweep", "qd=4,1",
			"--slo", slo, "--duration", "300ms", "--size", "8M", "--timeout", "3s"}
		if asJSON {
			args = append(args, "--json")
		}
		r := itest.Run(t, 2*time.Minute, nil, args...)
		if r.Code != 0 {
			t.Fatalf("--slo %s: exit %d: %s", slo, r.Code, r.Stderr)
		}
		return r
	}
	report := func(r itest.Result) *result.Report {
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		var rep result.Report
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Fleet == nil || rep.Fleet.Sweep == nil || len(rep.Fleet.Sweep.Curves) != 1 {
			t.Fatalf("no sweep of one shape: %s", lines[len(lines)-1])
		}
		return &rep
	}
	codes := func(rep *result.Report) []string {
		var cs []string
		for _, f := range rep.Findings {
			cs = append(cs, f.Code)
		}
		return cs
	}

	rep := report(sweep("p99=1h", true))
	f := rep.Fleet
	cv := f.Sweep.Curves[0]
	if cv.Shape != "randread 8 KiB" || len(cv.Points) != 2 || cv.Points[0].QD != 1 || cv.Points[1].QD != 4 {
		t.Fatalf("the curve: %+v", cv)
	}
	if want := []string{"randread 8 KiB QD1", "randread 8 KiB QD4"}; !slices.Equal(f.Config.Patterns, want) {
		t.Errorf("patterns run %v, want %v (the depths ascending)", f.Config.Patterns, want)
	}
	best := 0
	for i, pt := range cv.Points {
		fp := f.Patterns[pt.Pattern]
		if fp.Name != f.Config.Patterns[i] || pt.IOPS != fp.IOPS || pt.Hosts != 3 || pt.Held == nil || !*pt.Held || pt.Latency == nil || *pt.Latency != fp.Latency.P99 {
			t.Errorf("step %d: %+v against its pattern %+v", i, pt, fp)
		}
		if pt.IOPS > cv.Points[best].IOPS {
			best = i
		}
	}
	if cv.Knee == nil || *cv.Knee != best {
		t.Errorf("knee %v, want step %d (the most IOPS, every step held)", cv.Knee, best)
	}
	if cs := codes(rep); !slices.Contains(cs, "fleet.knee") || slices.Contains(cs, "fleet.slo_missed") {
		t.Errorf("findings %v: want fleet.knee, not fleet.slo_missed", cs)
	}

	rep = report(sweep("p99=1ns", true))
	if cv := rep.Fleet.Sweep.Curves[0]; cv.Knee != nil || cv.Points[0].Held == nil || *cv.Points[0].Held {
		t.Errorf("an objective of 1 ns: %+v", cv)
	}
	if cs := codes(rep); slices.Contains(cs, "fleet.knee") || !slices.Contains(cs, "fleet.slo_missed") {
		t.Errorf("findings %v: want fleet.slo_missed, not fleet.knee", cs)
	}

	out := sweep("p99=1h", false).Stdout
	for _, want := range []string{"sweep: randread 8 KiB, every host at once", "p99 ≤ 3600 s", "held ← knee"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table has no %q:\n%s", want, out)
		}
	}
}

// TestFleetNet: two streams from this host to each of three agents at
// once, beside an address where nothing answers and one that accepts
// and says nothing: the three receive, each stream's rate is given, the
// total is their sum, the two others are reported with why and did not
// stop them; each agent freed its test (a second run finds them free,
// though each takes one test at a time); an agent killed mid-run is
// reported and the others' streams run on.
func TestFleetNet(t *testing.T) {
	var to []string
	var agents []*itest.Agent
	for range 3 {
		a := itest.StartAgent(t, []string{"--max-tests", "1"})
		to, agents = append(to, a.Addr), append(agents, a)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, saying nothing
		}
	}()
	to = append(to, gone, silent.Addr().String())
	args := []string{"fleet", "net", "--to", strings.Join(to, ","), "--streams-per-host", "2", "--duration", "500ms", "--timeout", "2s", "--json"}
	for run := range 2 {
		r := itest.Run(t, 2*time.Minute, nil, args...)
		// Three received, two did not: exit 1, the first named.
		if r.Code != 1 || !strings.Contains(r.Stderr, "2 of the fleet's 5 hosts gave no figures, or not all; the first, "+gone+": ") {
			t.Fatalf("run %d: exit %d: %s", run, r.Code, r.Stderr)
		}
		f := fleetNet(t, r.Stdout)
		if len(f.Hosts) != 5 || f.Config.StreamsPerHost != 2 {
			t.Fatalf("run %d: %+v", run, f)
		}
		var sum float64
		for i, h := range f.Hosts[:3] {
			if !h.Counted() || len(h.Stream.PerStream) != 2 || h.Stream.Throughput <= 0 || h.StartedAfter == nil || h.Share <= 0 {
				t.Fatalf("run %d: host %d: %+v", run, i, h)
			}
			// Its Start was sent after the instant, by what this busy
			// machine's scheduler took: never before it.
			if a := h.StartedAfter.D(); a < 0 || a > 2*time.Second {
				t.Errorf("run %d: host %d began %v after the instant", run, i, a)
			}
			sum += h.Stream.Throughput
		}
		for _, h := range f.Hosts[3:] {
			if h.Error == "" || h.Stream != nil {
				t.Errorf("run %d: a host that does not answer: %+v", run, h)
			}
		}
		if f.Total.Hosts != 3 || f.Total.Streams != 6 || math.Abs(f.Total.Throughput-sum) > 0.01*sum {
			t.Errorf("run %d: total %+v, the hosts' sum %g", run, f.Total, sum)
		}
		if len(f.Links) != 1 || f.Links[0].Rate != 0 || !strings.Contains(f.Links[0].RateUnknown, "on this machine") {
			t.Errorf("run %d: links %+v: the agents are on this machine, no NIC's rate", run, f.Links)
		}
		t.Logf("run %d: %s in all, start %+v", run, metric.FormatBitRate(f.Total.Throughput), *f.Start)
	}
	for _, a := range agents {
		a.WaitLog(t, "test finished")
	}

	// One agent killed once its test runs: it is reported, the others
	// receive to the end.
	r := make(chan itest.Result, 1)
	go func() {
		r <- itest.Run(t, 2*time.Minute, nil, "fleet", "net", "--to", strings.Join(to[:3], ","), "--duration", "3s", "--timeout", "2s", "--json")
	}()
	agents[1].WaitLog(t, "test started")
	agents[1].Cmd.Process.Kill()
	res := <-r
	if res.Code != 1 || !strings.Contains(res.Stderr, "1 of the fleet's 3 hosts gave no figures, or not all; the first, "+to[1]+": ") {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	f := fleetNet(t, res.Stdout)
	if h := f.Hosts[1]; h.Error == "" || h.Counted() {
		t.Errorf("the agent killed mid-run: %+v", h)
	}
	if f.Total.Hosts != 2 || !f.Hosts[0].Counted() || !f.Hosts[2].Counted() {
		t.Errorf("the others: %+v", f.Total)
	}
}

// fleetNet is the fleet of a run's last JSON line, held to carry a
// fleet.host_failed naming each host with an error.
func fleetNet(t *testing.T, stdout string) *result.FleetNet {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var rep result.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil || rep.FleetNet == nil {
		t.Fatalf("no fleet net: %v\n%s", err, stdout)
	}
	for _, h := range rep.FleetNet.Hosts {
		if h.Error == "" {
			continue
		}
		if !slices.ContainsFunc(rep.Findings, func(f result.Finding) bool {
			return f.Code == "fleet.host_failed" && strings.Contains(f.Summary, h.Name)
		}) {
			t.Errorf("%s failed (%s) and no finding names it: %+v", h.Name, h.Error, rep.Findings)
		}
	}
	return rep.FleetNet
}

// TestFleetHTML: fleet disk and fleet net given --html write the fleet's
// page beside their usual output, and `narrows report` makes the same
// page from the saved run: a sweep's curve with its knee, a host that did
// not answer in its row with why; the replicas' table.
func TestFleetHTML(t *testing.T) {
	dir := t.TempDir()
	var on []string
	for range 2 {
		a := itest.StartAgent(t, []string{"--disk-path", t.TempDir()})
		on = append(on, a.Addr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"fleet-disk", []string{"fleet", "disk", "--on", strings.Join(append(slices.Clone(on), gone), ","), "--rw", "randread", "--block", "8K",
			"--sweep", "qd=1,2", "--slo", "p99=1h", "--duration", "200ms", "--size", "8M", "--timeout", "3s"}, 1,
			[]string{`class="chart chart-fleet-iops"`, `class="chart chart-fleet-slo"`, `class="chart chart-fleet-latency"`, "knee: QD ", "objective p99 ≤ ",
				`class="fleet-hosts"`, "What does the fleet give within the latency objective?", on[0], on[1], gone}},
		{"fleet-net", []string{"fleet", "net", "--to", strings.Join(on, ","), "--duration", "500ms"}, 0,
			[]string{`class="fleet-hosts"`, "Is one replica&#39;s path the weak one?", "share of the median replica", on[0], on[1]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			page := filepath.Join(dir, c.name+".html")
			r := itest.Run(t, 2*time.Minute, nil, append(c.args, "--json", "--html", page)...)
			if r.Code != c.code {
				t.Fatalf("exit %d, want %d: %s", r.Code, c.code, r.Stderr)
			}
			got, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("the page does not say %q", w)
				}
			}
			saved := filepath.Join(dir, c.name+".jsonl")
			os.WriteFile(saved, []byte(r.Stdout), 0o644)
			again := filepath.Join(dir, c.name+"-again.html")
			if rr := itest.Run(t, time.Minute, nil, "report", saved, "--html", again); rr.Code != 0 {
				t.Fatalf("report: exit %d: %s", rr.Code, rr.Stderr)
			}
			if b, _ := os.ReadFile(again); string(b) != string(got) {
				t.Error("the page from the saved run differs from the page the run wrote")
			}
		})
	}
}
