//go:build linux

package experiments

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// The fleet (issue 29): eight hosts, each a network namespace behind one
// switch with an agent and a directory of its own, run the data profile
// together, driven from a ninth. In fleet/throttled-host the eighth's
// directory is an ext4 on a loop device whose I/O the blkio controller
// (io.max on cgroup v2) holds to a few hundred a second for that agent:
// narrows must name that host, and only it; in fleet/even (four hosts)
// none is throttled, and none named.
var fleetScenarios = []Scenario{
	{
		Name: "fleet/throttled-host", CI: true, Share: testbed.Slots,
		Question: "does every host get what the cluster promises when all of them work at once, and which one does not?",
		Truth: "eight hosts, network namespaces behind one switch, each with an agent, run the data profile together; the eighth's directory is an ext4 on a loop device whose reads and writes the blkio controller (io.max on cgroup v2) holds to 300 a second for it; " +
			"a ninth address on the switch answers nothing",
		Say:    []string{"fleet.outlier", "fleet.host_failed"},
		NotSay: []string{"fleet.even"},
		Run:    func(c *Case) { fleetRun(c, 8, true) },
	},
	{
		Name: "fleet/even", CI: true, Share: testbed.Slots,
		Question: "does every host get what the cluster promises when all of them work at once?",
		Truth:    "four hosts, network namespaces behind one switch, each with an agent and a directory of its own on the machine's disk, run the data profile together: none is throttled",
		Say:      []string{"fleet.even"},
		NotSay:   []string{"fleet.outlier", "fleet.host_failed"},
		// Four, not eight: eight agents at QD32 each share this machine's
		// two cores unevenly, one host reading 81-83% of the median host's
		// IOPS at the QD32 steps (three runs of four): a CPU the hosts
		// share, which a fleet's hosts do not, at fleet.even's edge.
		Run: func(c *Case) { fleetRun(c, 4, false) },
	},
	{
		Name: "fleet/sweep-throttled-knee", CI: true, Share: testbed.Slots,
		Question: "how many IOPS does the fleet give, all hosts at once, within a p99 objective?",
		Truth: "four agents, each a directory on one ext4 on a loop device and each in a cgroup whose reads of it blkio (io.max on cgroup v2) holds to 2,000 a second: " +
			"every step gives the four caps, 8,000 IOPS; blkio hands each cgroup its budget in slices of about 100 ms, so once a host keeps 4 or more outstanding some wait a slice: " +
			"p99 ≤ 10 ms holds at QD1 and QD2 and not from QD4; fio on the same hosts (a server in each host's cgroup) through the same depths, started together at each step, has its knee there too",
		Say:    []string{"fleet.knee"},
		NotSay: []string{"fleet.slo_missed"},
		Run:    fleetThrottledSweep,
	},
	{
		// Not in CI: on this 2-core machine, four hosts beside fio's four,
		// narrows' knee read 0.84-0.94 of fio's (five runs of three pairs);
		// its per-step IOPS 0.74-1.08, lowest at the deep steps, where the
		// two cores are the limit and narrows' agents spend more of them
		// an I/O than fio does.
		Name: "fleet/sweep-knee", Share: testbed.Slots,
		Question: "how many IOPS does the fleet give, all hosts at once, within a p99 objective?",
		Truth: "four agents on this machine, each with a directory of its own on the machine's disk; fio in client/server mode, a server for each host, steps the same " +
			"random 8 KiB reads through the same queue depths on all four together first, and the objective is set between the two steps of fio's curve whose merged p99 rises most",
		Say:    []string{"fleet.knee"},
		NotSay: []string{"fleet.slo_missed"},
		Run:    func(c *Case) { fleetSweepRun(c, false) },
	},
	{
		Name: "fleet/sweep-slo-missed", CI: true, Share: testbed.Slots,
		Question: "how many IOPS does the fleet give, all hosts at once, within a p99 objective?",
		Truth:    "as fleet/sweep-knee, with the objective a third of the p99 fio's four hosts had together at queue depth 1: no step holds it",
		Say:      []string{"fleet.slo_missed"},
		NotSay:   []string{"fleet.knee"},
		Run:      func(c *Case) { fleetSweepRun(c, true) },
	},
}

// fleetThrottledSweep steps four hosts, each held by blkio to 2,000 reads
// a second of one loop device, through QD1-16 with p99 ≤ 10 ms: the knee
// is QD1 or QD2, its IOPS the four caps summed, and QD4 is over. Measured
// (cgroup v1's blkio, three runs): the merged p99 0.34-0.97 ms at QD1, 1.07-5.1 ms at QD2,
// 94-102 ms from QD4, where some I/Os wait for the throttle's next slice;
// every step 7,728-8,543 IOPS.
func fleetThrottledSweep(c *Case) {
	const cap = 2000
	mnt := c.T.TempDir()
	image := filepath.Join(c.T.TempDir(), "fleet.img")
	if f, err := os.Create(image); err != nil || f.Truncate(256<<20) != nil || f.Close() != nil {
		c.T.Fatalf("an image for the fleet: %v", err)
	}
	dev := c.mountExt4At(image, mnt)
	num, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
	if err != nil {
		c.T.Fatal(err)
	}
	majMin := strings.TrimSpace(string(num))
	var on, dirs, cgs []string
	for i := range 4 {
		dir := filepath.Join(mnt, fmt.Sprintf("host%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			c.T.Fatal(err)
		}
		a := itest.StartAgent(c.T, []string{"--disk-path", dir})
		cg, v2 := c.newCgroup("sweephost", "blkio", "+io")
		if v2 {
			c.setCgroup(cg, "io.max", fmt.Sprintf("%s riops=%d", majMin, cap))
		} else {
			c.setCgroup(cg, "blkio.throttle.read_iops_device", fmt.Sprintf("%s %d", majMin, cap))
		}
		c.setCgroup(cg, "cgroup.procs", fmt.Sprint(a.Cmd.Process.Pid))
		on, dirs, cgs = append(on, a.Addr), append(dirs, dir), append(cgs, cg)
	}
	defer unix.Sync()
	depths := []int{1, 2, 4, 8, 16}
	rep := c.Narrows(nil, "fleet", "disk", "--on", strings.Join(on, ","), "--rw", "randread", "--block", fmt.Sprint(sweepBlock),
		"--sweep", "qd=1,2,4,8,16", "--slo", "p99=10ms", "--duration", "1s", "--size", "16M", "--timeout", "3s")
	f := rep.Fleet
	if f == nil || f.Sweep == nil || len(f.Sweep.Curves) != 1 || len(f.Sweep.Curves[0].Points) != 5 {
		c.T.Fatalf("fleet disk --sweep wrote no curve of 5 steps: %+v", f)
	}
	cv := f.Sweep.Curves[0]
	for _, pt := range cv.Points {
		c.T.Logf("QD%d: %.0f IOPS, merged p99 %v, held %v", pt.QD, pt.IOPS, pt.Latency.D(), pt.Held != nil && *pt.Held)
	}
	c.Expect("the knee at QD1 or QD2, QD4 over", cv.Knee != nil && cv.Points[*cv.Knee].QD <= 2 && cv.Points[2].Held != nil && !*cv.Points[2].Held,
		fmt.Sprintf("knee %s, QD4 p99 %v", kneeQD(cv), cv.Points[2].Latency.D()))
	if cv.Knee == nil {
		return
	}
	c.Within("the knee's IOPS / the four hosts' caps", cv.Points[*cv.Knee].IOPS, 4*cap, 0.9, 1.1, "issue 29: the knee is what the fleet gives within the objective")
	// fio on the same hosts (a server in each host's cgroup), the same
	// depths, started together at each step: its knee where narrows' is.
	f2 := fioFleetSweep(c, dirs, depths, "16M", func(host, pid int) { c.setCgroup(cgs[host], "cgroup.procs", fmt.Sprint(pid)) })
	for i, pt := range f2 {
		c.T.Logf("fio QD%d: %.0f IOPS, merged p99 %v", depths[i], pt.iops, pt.p99)
	}
	k := fioKnee(f2, 10*time.Millisecond)
	c.Expect("fio's knee at QD1 or QD2 too", k >= 0 && depths[k] <= 2, fmt.Sprintf("fio's knee at step %d", k))
	if k < 0 {
		return
	}
	c.Within("the knee's IOPS / fio's on the same hosts", cv.Points[*cv.Knee].IOPS, f2[k].iops, 0.9, 1.1, "issue 29: the sweep's knee against fio within 10%")
}

// The sweep's shape, for narrows and fio alike, and its depths: steps
// close enough near the knee that the IOPS of two neighbours differ by
// less than the 10% the knee is held to. This disk's knee is at its
// saturation's onset, four hosts at 4 to 8 outstanding each, where the
// p99 of one step moves between runs by up to 4× for fio as for narrows
// (a QD8 step read 1.3 and 5 ms), so which side of the objective a step
// falls moves by a step now and then; with depths doubling, one step was
// 3–22% of the IOPS (five runs of 1,2,4,8,16,32: the knees met in 6 of
// 10 pairs, their IOPS 0.83–1.02 of fio's).
var (
	sweepDepths = []int{1, 2, 4, 6, 8, 12, 16}
	sweepBlock  = 8 << 10
)

// fleetSweepRun steps four hosts through sweepDepths with fio (client and
// servers) and with narrows, in turn, twice (fio, narrows, fio, narrows:
// the disk's drift between runs falls on both alike), and holds narrows'
// knee to fio's. The objective comes from fio's first curve: between the
// steps where its merged p99 rises most, or a third of its first step's
// when missed.
func fleetSweepRun(c *Case, missed bool) {
	depths := sweepDepths
	if missed {
		depths = []int{1, 2, 4} // no step holds: the knee's resolution is not wanted
	}
	// Five pairs: four processes on this machine's virtio disk read
	// 55-67 thousand IOPS at QD8 from one run to the next, either tool,
	// with the p99 anywhere in 0.9-3.3 ms, and the knee moves a step with
	// it; three pairs' knees read 0.85-0.97 of fio's in five runs.
	pairs := 5
	if missed {
		pairs = 1
	}
	var on, dirs []string
	for range 4 {
		dir := c.T.TempDir()
		a := itest.StartAgent(c.T, []string{"--disk-path", dir})
		on, dirs = append(on, a.Addr), append(dirs, dir)
	}
	defer unix.Sync()
	var qds []string
	for _, d := range depths {
		qds = append(qds, fmt.Sprint(d))
	}
	var slo time.Duration
	var fio [][]fioStep
	var ours []result.FleetCurve
	runFio := func(pair int) {
		f := fioFleetSweep(c, dirs, depths, "32M", nil)
		for i, pt := range f {
			c.T.Logf("fio, run %d, QD%d: %.0f IOPS, merged p99 %v", pair+1, depths[i], pt.iops, pt.p99)
		}
		fio = append(fio, f)
		if pair == 0 {
			slo = sloBetween(c, f, missed)
		}
	}
	runNarrows := func(pair int) {
		rep := c.Narrows(nil, "fleet", "disk", "--on", strings.Join(on, ","), "--rw", "randread", "--block", fmt.Sprint(sweepBlock),
			"--sweep", "qd="+strings.Join(qds, ","), "--slo", fmt.Sprintf("p99=%dus", slo.Microseconds()), "--duration", "1s", "--size", "32M", "--timeout", "3s")
		fl := rep.Fleet
		if fl == nil || fl.Sweep == nil || len(fl.Sweep.Curves) != 1 || len(fl.Sweep.Curves[0].Points) != len(depths) {
			c.T.Fatalf("fleet disk --sweep wrote no curve of %d steps: %+v", len(depths), fl)
		}
		cv := fl.Sweep.Curves[0]
		for _, pt := range cv.Points {
			c.T.Logf("narrows, run %d, QD%d: %.0f IOPS, merged p99 %v", pair+1, pt.QD, pt.IOPS, pt.Latency.D())
		}
		ours = append(ours, cv)
	}
	// fio first in the first pair (the objective comes from its curve),
	// then each pair in the other order: whatever the run before leaves
	// the disk doing (a test file's layout written back, a cache) falls
	// on both tools alike.
	for pair := range pairs {
		if pair%2 == 0 {
			runFio(pair)
			runNarrows(pair)
		} else {
			runNarrows(pair)
			runFio(pair)
		}
	}
	slo = slo.Truncate(time.Microsecond)
	if missed {
		held := false
		for _, f := range fio {
			held = held || fioKnee(f, slo) >= 0
		}
		c.Expect("fio's steps all over the objective too", !held, fmt.Sprintf("p99 ≤ %v", slo))
		c.Expect("no knee", ours[0].Knee == nil, kneeQD(ours[0]))
		return
	}
	var theirs, mine []float64
	var at []string
	for pair := range pairs {
		k := fioKnee(fio[pair], slo)
		if k < 0 || ours[pair].Knee == nil {
			c.Expect("a knee in each run", false, fmt.Sprintf("run %d: fio's step %d, narrows' %s (objective %v)", pair+1, k, kneeQD(ours[pair]), slo))
			return
		}
		theirs = append(theirs, fio[pair][k].iops)
		mine = append(mine, ours[pair].Points[*ours[pair].Knee].IOPS)
		at = append(at, fmt.Sprintf("run %d: narrows %s, fio QD%d", pair+1, kneeQD(ours[pair]), depths[k]))
	}
	c.T.Logf("the knees with p99 ≤ %v: %s", slo, strings.Join(at, "; "))
	c.Within(fmt.Sprintf("the knee's IOPS / fio's (the geometric mean of %d pairs)", pairs), geomean(mine), geomean(theirs), 0.9, 1.1,
		"issue 29: the sweep's knee against fio within 10%")
}

// sloBetween is the objective from fio's curve: the geometric mean of the
// two steps whose merged p99 rises most, or a third of the first step's
// when missed.
func sloBetween(c *Case, f []fioStep, missed bool) time.Duration {
	if missed {
		return f[0].p99 / 3
	}
	best, at := 0.0, 0
	for i := range len(f) - 1 {
		if r := float64(f[i+1].p99) / float64(f[i].p99); r > best {
			best, at = r, i
		}
	}
	if best < 1.5 {
		c.T.Fatalf("fio's merged p99 never rose by half from one depth to the next (at most %.2f×): no knee on this disk to hold narrows to", best)
	}
	return time.Duration(math.Sqrt(float64(f[at].p99) * float64(f[at+1].p99)))
}

// fioKnee is fio's knee as narrows finds its own: the step with the most
// IOPS among those whose p99 held slo (-1: none).
func fioKnee(f []fioStep, slo time.Duration) int {
	k := -1
	for i, pt := range f {
		if pt.p99 <= slo && (k < 0 || pt.iops > f[k].iops) {
			k = i
		}
	}
	return k
}

func geomean(xs []float64) float64 {
	l := 0.0
	for _, x := range xs {
		l += math.Log(x)
	}
	return math.Exp(l / float64(len(xs)))
}

func kneeQD(cv result.FleetCurve) string {
	if cv.Knee == nil {
		return "none"
	}
	return fmt.Sprintf("QD%d", cv.Points[*cv.Knee].QD)
}

// fioStep is one depth of fio's sweep over the fleet: the hosts' IOPS
// summed, and the p99 of their completions pooled (their latency
// histograms merged).
type fioStep struct {
	iops float64
	p99  time.Duration
}

// fioFleetSweep runs fio's client against a server per dir (a host): one
// file laid out on each first, then a client run a depth, each stepping
// random reads of sweepBlock on io_uring with O_DIRECT as narrows does,
// and reads its json+ output: per host and depth, IOPS and the total
// latency's bins. A run a depth starts the hosts together at every step,
// as narrows' sweep does; one job file of stonewalled steps let each
// server go on at its own pace, every step laying out a file of its own,
// and the hosts drifted apart (fewer of them at once at the deep steps).
func fioFleetSweep(c *Case, dirs []string, depths []int, size string, place func(host, pid int)) []fioStep {
	work := c.T.TempDir()
	var clients []string
	for i := range dirs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			c.T.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		srv := exec.Command("fio", fmt.Sprintf("--server=ip:127.0.0.1,%d", port))
		if err := itest.StartTied(srv); err != nil {
			c.T.Fatalf("fio --server: %v", err)
		}
		defer func() { srv.Process.Kill(); srv.Wait() }()
		if place != nil {
			place(i, srv.Process.Pid) // the backends it forks for the jobs go with it
		}
		// fio's client leaves out a server that does not answer yet, and
		// exits 0: each must listen before the client starts.
		for deadline := time.Now().Add(10 * time.Second); ; {
			conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				c.T.Fatalf("fio --server on port %d: not listening after 10 s: %v", port, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		clients = append(clients, fmt.Sprintf("--client=ip:127.0.0.1,%d", port))
	}
	// run runs section (after the global one) on every host at once.
	run := func(name, section string) []byte {
		args := []string{"--output-format=json+"}
		for i, dir := range dirs {
			jf := filepath.Join(work, fmt.Sprintf("host%d-%s.fio", i, name))
			job := fmt.Sprintf("[global]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=%d\nsize=%s\nfilename=%s\n[%s]\n%s",
				sweepBlock, size, filepath.Join(dir, "fleet.fio"), name, section)
			if err := os.WriteFile(jf, []byte(job), 0o600); err != nil {
				c.T.Fatal(err)
			}
			args = append(args, clients[i], jf)
		}
		out, err := exec.Command("fio", args...).Output()
		if err != nil {
			c.T.Fatalf("fio %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run("layout", "create_only=1\n")
	steps := make([]fioStep, len(depths))
	for i, d := range depths {
		steps[i] = fioStepOf(c, run(fmt.Sprintf("qd%d", d), fmt.Sprintf("iodepth=%d\nruntime=1\ntime_based\nlat_percentiles=1\n", d)), fmt.Sprintf("qd%d", d), len(dirs))
	}
	return steps
}

// fioStepOf reads a client run's json+ output: the IOPS of job's hosts
// summed, and the p99 of their latency bins pooled.
func fioStepOf(c *Case, out []byte, job string, hosts int) fioStep {
	// The client writes the servers' notes first, then the JSON.
	out = append([]byte{'\n'}, out...)
	at := strings.Index(string(out), "\n{")
	if at < 0 {
		c.T.Fatalf("fio wrote no JSON:\n%s", out)
	}
	var doc struct {
		Clients []struct {
			Job  string `json:"jobname"`
			Read struct {
				IOPS float64 `json:"iops"`
				Lat  struct {
					Bins map[string]uint64 `json:"bins"`
				} `json:"lat_ns"`
			} `json:"read"`
		} `json:"client_stats"`
	}
	if err := json.Unmarshal(out[at+1:], &doc); err != nil {
		c.T.Fatalf("fio's JSON: %v", err)
	}
	var step fioStep
	bins := map[int64]uint64{}
	var total uint64
	seen := 0
	for _, cl := range doc.Clients {
		if cl.Job != job {
			continue
		}
		seen++
		step.iops += cl.Read.IOPS
		for v, n := range cl.Read.Lat.Bins {
			ns, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				c.T.Fatalf("fio's bin %q: %v", v, err)
			}
			bins[ns] += n
			total += n
		}
	}
	if seen != hosts || total == 0 {
		c.T.Fatalf("fio %s: %d of %d hosts, %d I/Os timed", job, seen, hosts, total)
	}
	rank := uint64(math.Ceil(0.99 * float64(total)))
	var n uint64
	for _, k := range slices.Sorted(maps.Keys(bins)) {
		if n += bins[k]; n >= rank {
			step.p99 = time.Duration(k)
			break
		}
	}
	return step
}

// fleetRun runs fleet disk from one more host over hosts agents, each in
// a namespace of its own behind one switch (the last throttled when
// throttle, with an address on the switch where nothing answers).
func fleetRun(c *Case, hosts int, throttle bool) {
	sw := testbed.NewTestSwitch(c.T, testbed.SwitchOptions{Hosts: hosts + 1})
	client := sw.Hosts[0]
	var on []string
	for i, h := range sw.Hosts[1:] {
		dir := c.T.TempDir()
		var dev string
		if throttle && i == hosts-1 {
			image := filepath.Join(c.T.TempDir(), "slow.img")
			if f, err := os.Create(image); err != nil || f.Truncate(256<<20) != nil || f.Close() != nil {
				c.T.Fatalf("an image for the slow host: %v", err)
			}
			dev = c.mountExt4At(image, dir)
		}
		a := itest.StartAgent(c.T, []string{"--listen", agentAt(h), "--disk-path", dir}, inNS(h)...)
		if dev != "" {
			num, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
			if err != nil {
				c.T.Fatal(err)
			}
			majMin := strings.TrimSpace(string(num))
			cg, v2 := c.newCgroup("slowhost", "blkio", "+io")
			if v2 {
				c.setCgroup(cg, "io.max", fmt.Sprintf("%s riops=300 wiops=300", majMin))
			} else { // cgroup v1's blkio: the I/O the process submits itself, as O_DIRECT's is
				c.setCgroup(cg, "blkio.throttle.read_iops_device", majMin+" 300")
				c.setCgroup(cg, "blkio.throttle.write_iops_device", majMin+" 300")
			}
			c.setCgroup(cg, "cgroup.procs", fmt.Sprint(a.Cmd.Process.Pid))
		}
		on = append(on, agentAt(h))
	}
	if throttle {
		b := sw.Prefix.Addr().As4()
		b[3] = 200 // on the switch, no host: its ARP goes unanswered
		on = append(on, net.JoinHostPort(net.IP(b[:]).String(), strconv.Itoa(agentPort)))
	}
	// Whatever the hosts wrote (their test files laid out, the loop
	// device's backing file through the page cache) reaches the disk
	// before the scenario gives its shares back: a proof's TestReindexStandby,
	// whose standby flushes to the same disk, read 0.72 of plan sync's
	// prediction beside the writeback of 256 MiB of these files.
	defer unix.Sync()
	// Exit code 1 when a host gave no figures: the dead address.
	code := 0
	if throttle {
		code = 1
	}
	rep, _, _ := c.NarrowsExit(client, code, "fleet", "disk", "--on", strings.Join(on, ","), "--profile", "data", "--duration", "1s", "--size", "32M", "--timeout", "3s")
	if rep == nil {
		c.T.Fatal("fleet disk wrote no summary")
	}
	f := rep.Fleet
	if f == nil {
		c.T.Fatal("fleet disk wrote no fleet")
	}
	if f.Start != nil {
		c.T.Logf("started together: %d hosts, median %v after the instant, skew %v", f.Start.Hosts, f.Start.MedianAfter.D(), f.Start.Skew.D())
	}
	for i, p := range f.Patterns {
		var shares []string
		for _, h := range f.Hosts {
			if h.Disk != nil && i < len(h.Disk.Patterns) && p.MedianIOPS > 0 {
				shares = append(shares, fmt.Sprintf("%.0f%%", 100*h.Disk.Patterns[i].IOPS/p.MedianIOPS))
			}
		}
		c.T.Logf("%s: %d hosts, %.0f IOPS, median host %.0f; the hosts' shares of it %s", p.Name, p.Hosts, p.IOPS, p.MedianIOPS, strings.Join(shares, " "))
	}
	if throttle {
		o := finding(rep, "fleet.outlier")
		named := o != nil && strings.Contains(o.Summary, on[hosts-1]+" gave")
		for _, h := range on[:hosts-1] {
			named = named && !strings.Contains(o.Summary, h+" gave")
		}
		c.Expect("the throttled host is the one named", named, fmt.Sprint(o))
	}
	var sum float64
	for _, h := range f.Hosts {
		if h.Disk != nil && len(h.Disk.Patterns) > 0 {
			sum += h.Disk.Patterns[0].IOPS
		}
	}
	c.Within("the fleet's IOPS / the hosts' own, summed (the first pattern)", f.Patterns[0].IOPS, sum, 0.99, 1.01, "issue 29: the aggregate is the sum of the hosts' figures")
}
