//go:build linux

package experiments

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
	"github.com/narrows/narrows/internal/testenv"
	"github.com/narrows/narrows/internal/words"
)

// narrows host's scenarios. Each holds the whole machine (what it
// measures is the machine's own CPUs), with no other delay line alive (a
// line holds a CPU latency request of its own while it exists) and the
// case's host watch stopped (its millisecond sleeps keep a CPU from
// sleeping long). In host/wakeups-as-is the agent is on host B of a line
// that lets the CPUs sleep, so both ends are measured, one after the
// other, as across two machines.
var hostScenarios = []Scenario{
	{
		Name: "host/wakeups-as-is", CI: true, Share: testbed.Slots,
		Question: "is this host's power saving what slows a chatty session?",
		Truth: "the machine as it is (on this project's VMs: cpuidle haltpoll, guest halt polling off, a halted vCPU woken by the hypervisor); " +
			"the truth is pgbench -c 1 SELECT 1 on loopback, in alternating rounds with the CPUs as they are and kept awake",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			pg, l, addr := wakeupBed(c)
			rep := c.Narrows(l.A, "host", "--to", addr, "--duration", "50s")
			gain, costs := wakeupTruth(c, pg, "narrows", c.Said("host.cpu_wakeups_none") && !c.Said("host.cpu_wakeups"), codes(rep))
			if !costs {
				return
			}
			f := finding(rep, "host.cpu_wakeups")
			if f == nil {
				return // the Say list fails the row
			}
			my := loopbackMaria(c)
			slap := slapAwake(c, my)
			c.T.Logf("mariadb-slap --concurrency=1 SELECT 1 on loopback, µs a query as is / with the CPUs kept awake, by round: %s", slap)
			// The two clients' gains disagree with each other on this
			// machine by up to a quarter: pgbench's rounds as is run at
			// 57-63 µs or, for minutes at a time, at 72-82 (a proof read
			// its gain 55.2 µs beside mariadb-slap's 44.2 in the same run).
			// The prediction is held within 15% of one of them at least,
			// and each ratio is stated; issue 28 asks for both.
			pred := f.Values["per_round_trip_seconds"]
			rp, rs := pred/gain, pred/slap.gain()
			c.T.Logf("predicted %.1f µs a round trip: %.3f of pgbench's gain (%.1f µs), %.3f of mariadb-slap's (%.1f µs)", pred*1e6, rp, gain*1e6, rs, slap.gain()*1e6)
			within := func(r float64) bool { return r >= 0.85 && r <= 1.15 }
			c.Expect("what waking adds to a round trip, predicted, within 15% of pgbench's or mariadb-slap's gain with the CPUs kept awake", within(rp) || within(rs),
				fmt.Sprintf("%.2f of pgbench's, %.2f of mariadb-slap's", rp, rs))
			c.Expect("both ends measured, by experiment on each", rep.Host != nil && rep.Host.Agent != nil && rep.Host.Agent.Wakeup != nil && !rep.Host.SameHost, "agent side measured")
		},
	},
	{
		Name: "host/wakeups-postgres", Share: testbed.Slots,
		Question: "what does waking idle CPUs add to each of my database's queries?",
		Truth: "narrows host --dsn to a PostgreSQL on this host's loopback: its own queries timed as is and with the CPUs kept awake; " +
			"the truth is pgbench -c 1 SELECT 1 to the same server, in alternating rounds the same way",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			pg := loopbackPG(c)
			dbWakeups(c, pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword), "pgbench -c 1", func() rounds { return pgbenchAwake(c, pg) })
		},
	},
	{
		Name: "host/wakeups-mariadb", Share: testbed.Slots,
		Question: "what does waking idle CPUs add to each of my database's queries?",
		Truth: "narrows host --dsn to a MariaDB on this host's loopback: its own queries timed as is and with the CPUs kept awake; " +
			"the truth is mariadb-slap --concurrency=1 SELECT 1 to the same server, in alternating rounds the same way",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			m := loopbackMaria(c)
			dbWakeups(c, m.DSN(m.Source, "narrows", dbserver.NarrowsPassword), "mariadb-slap --concurrency=1", func() rounds { return slapAwake(c, m) })
		},
	},
	{
		Name: "host/wakeups-kept-awake", CI: true, Share: testbed.Slots,
		Question: "would a power plan change speed up my round trips, on a host already tuned?",
		Truth: "the CPUs kept awake for the whole run, as tuned's latency-performance does (a CPU latency request of 0 held; where no cpuidle driver reads one, " +
			"spinning idle-priority threads): nothing is left to gain",
		Say:    []string{"host.cpu_wakeups_none"},
		NotSay: []string{"host.cpu_wakeups", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			release := keepAwake(c)
			defer release()
			// This host only: the agent's side is the same code, and
			// host/wakeups-as-is measures it (each end's experiment alone
			// is 34 s of the machine to itself). Up to 90 s, as narrows
			// itself advises when its pairs scatter (it ends once judged,
			// after four pairs here most runs): two fresh clones' runs in
			// eleven ended unjudged at 50 s, one "28 ns ± 2.23 µs after 6
			// pairs" against the 2 µs floor.
			rep := c.Narrows(nil, "host", "--duration", "90s")
			if p := rep.Host.Here.Power; p.LatencyRequestMicros != nil && sysinfo.CPUIdleGoverned() {
				c.Expect("the evidence shows the request held", *p.LatencyRequestMicros == 0, fmt.Sprintf("latency_request_us %d", *p.LatencyRequestMicros))
			}
		},
	},
	{
		Name: "host/wakeups-busy", CI: true, Share: testbed.Slots,
		Question: "is this host's power saving what slows a chatty session?",
		Truth: "the machine busy with other work: a process on each CPU computes for 1 ms and sleeps for 2, as a busy server's threads do, so the CPUs idle between " +
			"its bursts at that work's pace, not the machine's; what a CPU waking costs a session then depends on that work, and nothing about the machine can be told",
		Say:    []string{"host.cpu_wakeups_unjudged"},
		NotSay: []string{"host.cpu_wakeups", "host.cpu_wakeups_none"},
		Run: func(c *Case) {
			c.host.close()
			stop := busyCPUs(c, time.Millisecond, 2*time.Millisecond)
			defer stop()
			rep := c.Narrows(nil, "host", "--duration", "50s")
			why := ""
			if rep.Host != nil && rep.Host.Here != nil && rep.Host.Here.Wakeup != nil {
				why = rep.Host.Here.Wakeup.Why
			}
			c.Expect("says the machine was busy with other work", strings.Contains(why, "other work took"), why)
		},
	},
	{
		Name: "host/wakeups-one-cpu", CI: true,
		Question: "does narrows judge what it cannot measure?",
		Truth:    "narrows may run on one CPU only (taskset): its two threads cannot wait on two CPUs, and nothing can be told",
		Say:      []string{"host.cpu_wakeups_unjudged"},
		NotSay:   []string{"host.cpu_wakeups", "host.cpu_wakeups_none"},
		Run: func(c *Case) {
			args := []string{"host", "--json"}
			_, _, res := c.record(0, args, itest.RunWrapped(c.T, time.Minute, nil, []string{"taskset", "-c", "0"}, args...))
			c.Expect("says why", strings.Contains(res.Stdout, "one CPU only"), "one CPU only")
		},
	},
}

// loopbackPG is a PostgreSQL on this host's loopback for the truth's
// pgbench (its standby too, unused).
func loopbackPG(c *Case) *dbserver.Postgres {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := dbserver.StartPostgres(ctx)
	if err != nil {
		testenv.Need(c.T, testenv.DB, "PostgreSQL could not start: %v", err)
	}
	c.T.Cleanup(pg.Close)
	if err := pg.StopStandby(ctx); err != nil {
		c.T.Fatal(err)
	}
	return pg
}

// rounds are a truth's rounds, each a run as is and one with the CPUs
// kept awake: seconds a round trip.
type rounds struct{ asis, awake []float64 }

func (r *rounds) add(asis, awake float64) {
	r.asis, r.awake = append(r.asis, asis), append(r.awake, awake)
}

// gain is the median round's gain with the CPUs kept awake. A round as
// is may catch the machine still answering near the awake pace after
// the round before (a mariadb-slap round read 50.1 µs against 61.4 in
// the next run, and 30.9 µs of gain beside pgbench's 47.3 in the same
// run), or in its slower mode (pgbench 70-72 µs against 57-59): one
// such round does not move the median of three, as narrows host's
// settling blocks are not counted.
func (r rounds) gain() float64 {
	d := make([]float64, len(r.asis))
	for i := range d {
		d[i] = r.asis[i] - r.awake[i]
	}
	return metric.Median(d)
}

// String is the rounds in µs: "58.5/15.0 57.0/15.0 …".
func (r rounds) String() string {
	var b strings.Builder
	for i := range r.asis {
		fmt.Fprintf(&b, "%.1f/%.1f ", r.asis[i]*1e6, r.awake[i]*1e6)
	}
	return strings.TrimSpace(b.String())
}

// settleAsIs is how long a truth's run as is runs before it counts: as
// narrows host's Settle (after 3 s, one of its blocks as is in four
// still ran near the awake pace).
const settleAsIs = 5

// pgbenchAwake is the truth: pgbench -c 1 SELECT 1 on loopback, three
// rounds each way alternating, the CPUs as they are (8 s, of which the
// last 3 count, after settleAsIs) and kept awake (3 s, the last 2
// counting): each round's mean seconds a transaction, as is and awake.
func pgbenchAwake(c *Case, pg *dbserver.Postgres) rounds {
	dir, err := pg.ScratchDir("pgbench")
	if err != nil {
		c.T.Fatal(err)
	}
	script := dir + "/select1.sql"
	if err := os.WriteFile(script, []byte("SELECT 1;\n"), 0o644); err != nil {
		c.T.Fatal(err)
	}
	run := func(secs, last int) float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := pg.Tool(ctx, pg.Primary, []string{"PGPASSWORD=" + dbserver.SuperPassword}, "pgbench", "-n", "-c", "1", "-M", "simple", "-T", strconv.Itoa(secs), "-P", "1",
			"-f", script, "-h", "127.0.0.1", "-p", strconv.Itoa(pg.Primary.Port), "-U", "postgres", "postgres")
		if err != nil {
			c.T.Fatalf("pgbench: %v\n%s", err, out)
		}
		lats := progressLatencies(out)
		if len(lats) < last {
			c.T.Fatalf("pgbench -P 1 gave %d progress lines, want %d:\n%s", len(lats), last, out)
		}
		var sum float64
		for _, x := range lats[len(lats)-last:] {
			sum += x
		}
		return sum / float64(last)
	}
	var r rounds
	for range 3 {
		asis := run(settleAsIs+3, 3)
		release := keepAwake(c)
		awake := run(3, 2)
		release()
		r.add(asis, awake)
	}
	return r
}

// loopbackMaria is a MariaDB on this host's loopback for the truth's
// mariadb-slap.
func loopbackMaria(c *Case) *dbserver.MariaDB {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := dbserver.StartMariaDB(ctx)
	if err != nil {
		testenv.Need(c.T, testenv.DB, "MariaDB could not start: %v", err)
	}
	c.T.Cleanup(m.Close)
	return m
}

// slapAwake is the truth again with the C client of the other engine:
// mariadb-slap --concurrency=1 SELECT 1 on loopback, three rounds each way
// alternating, each a run that settles (settleAsIs as is, about 1 s
// awake) and one that counts (about 2.4 s): each round's mean seconds a
// query, as is and awake.
func slapAwake(c *Case, m *dbserver.MariaDB) rounds {
	run := func(n int) float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := itest.Slap(ctx, m.Source.Port, n)
		out, err := cmd.CombinedOutput()
		if err != nil {
			c.T.Fatalf("mariadb-slap: %v\n%s", err, out)
		}
		secs, err := itest.SlapSeconds(out)
		if err != nil {
			c.T.Fatal(err)
		}
		return secs / float64(n)
	}
	var r rounds
	for range 3 {
		// As is, about 60 µs a query here: settleAsIs, then 2.4 s.
		run(settleAsIs * 1_000_000 / 60)
		asis := run(40_000)
		release := keepAwake(c)
		run(50_000)
		awake := run(100_000)
		release()
		r.add(asis, awake)
	}
	return r
}

var progressLat = regexp.MustCompile(`progress: [0-9.]+ s, [0-9.]+ tps, lat ([0-9.]+) ms`)

// progressLatencies are the mean latencies (seconds) of pgbench -P's lines.
func progressLatencies(out string) []float64 {
	var l []float64
	for _, m := range progressLat.FindAllStringSubmatch(out, -1) {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			l = append(l, v/1e3)
		}
	}
	return l
}

// keptAwakeBy is how keepAwake keeps the CPUs awake here, as narrows host
// would: the request where a cpuidle driver reads it, else spinning.
func keptAwakeBy() string {
	if sysinfo.CPUIdleGoverned() {
		return "a CPU latency request of 0"
	}
	return "spinning idle-priority processes"
}

// keepAwake keeps every CPU awake until release, the way narrows host
// does on this machine (keptAwakeBy), from outside narrows.
func keepAwake(c *Case) (release func()) {
	if sysinfo.CPUIdleGoverned() {
		release, err := sysinfo.HoldCPULatency()
		if err != nil {
			c.T.Fatalf("holding the CPU latency request: %v", err)
		}
		return release
	}
	var procs []*exec.Cmd
	var set unix.CPUSet
	unix.SchedGetaffinity(0, &set) //nolint:errcheck
	for cpu := 0; cpu < 1024; cpu++ {
		if !set.IsSet(cpu) {
			continue
		}
		p := exec.Command("chrt", "-i", "0", "taskset", "-c", strconv.Itoa(cpu), "sh", "-c", "while :; do :; done")
		if err := p.Start(); err != nil {
			c.T.Fatalf("spinning on CPU %d: %v", cpu, err)
		}
		procs = append(procs, p)
	}
	return func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait() //nolint:errcheck
		}
	}
}

// busyCPUs starts, on each CPU this process may use, a process that
// computes for on and sleeps for off, over and over (Python: on every
// machine the tests run on), until the function it returns stops them.
func busyCPUs(c *Case, on, off time.Duration) (stop func()) {
	var set unix.CPUSet
	unix.SchedGetaffinity(0, &set) //nolint:errcheck
	prog := fmt.Sprintf("import time\nwhile True:\n    t = time.monotonic()\n    while time.monotonic() - t < %g: pass\n    time.sleep(%g)\n", on.Seconds(), off.Seconds())
	var procs []*exec.Cmd
	for cpu := 0; cpu < 1024; cpu++ {
		if !set.IsSet(cpu) {
			continue
		}
		p := exec.Command("taskset", "-c", strconv.Itoa(cpu), "python3", "-c", prog)
		if err := p.Start(); err != nil {
			c.T.Fatalf("a busy process on CPU %d: %v", cpu, err)
		}
		procs = append(procs, p)
	}
	return func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait() //nolint:errcheck
		}
	}
}

// doctorHostScenarios: doctor's answer to "what on these hosts should
// change?", with a budget that holds the host experiment on both
// machines. Not in CI: it holds the whole machine for four minutes, and
// the codes it says are held both ways there by host/.
var doctorHostScenarios = []Scenario{
	{
		Name: "doctor/hosts", Share: testbed.Slots,
		Question: "what on these hosts should change? (doctor, with --budget 4m)",
		Truth: "as host/wakeups-as-is: the machine as it is, the agent on host B of a line that lets the CPUs sleep; " +
			"the truth is pgbench -c 1 SELECT 1 on loopback, as is and with the CPUs kept awake",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			pg, l, addr := wakeupBed(c)
			rep := c.Narrows(l.A, "doctor", "--to", addr, "--budget", "4m", "--out", filepath.Join(c.T.TempDir(), "doctor.jsonl"))
			var answer string
			for _, a := range words.Answers(rep) {
				if strings.HasPrefix(a.Question, "What on these hosts") {
					answer = a.Else
					if a.Finding != nil {
						answer = a.Finding.Code
					}
				}
			}
			gain, costs := wakeupTruth(c, pg, "doctor's hosts answer", answer == "host.cpu_wakeups_none", answer)
			if !costs {
				return
			}
			c.Expect("doctor's hosts answer is the wake-ups", answer == "host.cpu_wakeups", answer)
			if f := finding(rep, "host.cpu_wakeups"); f != nil {
				c.Within("what waking adds to a round trip, predicted by doctor / pgbench's gain with the CPUs kept awake", f.Values["per_round_trip_seconds"], gain, 0.85, 1.15,
					"issue 28: the predicted gain within 15% of a real pgbench's")
			}
		},
	},
}

// dbWakeups runs narrows host on dsn's own queries (not in CI yet: the
// truth's rounds run a minute after narrows' blocks, and this machine
// has two paces as is for minutes at a time; a fresh clone's proof read
// MariaDB's 0.838 with slap's rounds at 59.1 and 69.6 µs as is, where
// four other runs read 0.95-1.11; pgbench's 0.92-1.01 in three; the
// truth must be interleaved with narrows' blocks before CI holds it) and holds what it
// says waking adds to each to the database's own C client's gain with the
// CPUs kept awake (truth, named client), within issue 28's 15%. On a
// machine whose CPUs wake fast the client gains nothing beyond the floor:
// then narrows must say so.
func dbWakeups(c *Case, dsn, client string, truth func() rounds) {
	rep := c.Narrows(nil, "host", "--dsn", dsn, "--duration", "50s")
	var db *result.HostDatabase
	if rep.Host != nil {
		db = rep.Host.Database
	}
	c.Expect("this host's experiment timed the database's own queries, its server on this host", db != nil && db.Local, fmt.Sprintf("%+v", db))
	r := truth()
	gain, awake := r.gain(), metric.Median(r.awake)
	c.T.Logf("%s SELECT 1 on loopback, µs a query as is / with the CPUs kept awake (%s), by round: %s; the median round's gain %.1f µs", client, keptAwakeBy(), r, gain*1e6)
	if gain <= max(2e-6, 0.10*awake) {
		c.Excuse("host.cpu_wakeups", fmt.Sprintf("%s gains %.1f µs a query with the CPUs kept awake, within the floor: waking costs nothing here", client, gain*1e6))
		c.Excuse("host.cpu_wakeups_none", "the truth here is the other way")
		c.Expect("narrows says waking costs nothing, as "+client+" shows", c.Said("host.cpu_wakeups_none") && !c.Said("host.cpu_wakeups"), codes(rep))
		return
	}
	f := finding(rep, "host.cpu_wakeups")
	if f == nil {
		return // the Say list fails the row
	}
	c.Within("what waking adds to each of the database's queries, measured / "+client+"'s gain with the CPUs kept awake", f.Values["per_round_trip_seconds"], gain, 0.85, 1.15,
		"issue 28's 15%: the database's own queries against its own C client")
}

// wakeupBed is the wake-up scenarios' machine: the case's host watch
// stopped, a PostgreSQL on loopback for the truth, a line that lets the
// CPUs sleep, and an agent on its host B.
func wakeupBed(c *Case) (*dbserver.Postgres, *testbed.DelayLine, string) {
	c.host.close()
	pg := loopbackPG(c)
	l := c.Line(testbed.DelayLineOptions{LetCPUsSleep: true})
	return pg, l, c.Agent(l.B)
}

// wakeupTruth is pgbench's gain a transaction with the CPUs kept awake,
// and whether it is beyond the floor narrows judges by. On a machine
// whose CPUs wake fast it is not: the code the scenario is for is not
// judged there, and who (narrows, doctor's answer) must have said that
// waking costs nothing (saidNone, shown as said).
func wakeupTruth(c *Case, pg *dbserver.Postgres, who string, saidNone bool, said string) (gain float64, costs bool) {
	r := pgbenchAwake(c, pg)
	gain = r.gain()
	awake := metric.Median(r.awake)
	c.T.Logf("pgbench -c 1 SELECT 1 on loopback, µs a transaction as is / with the CPUs kept awake (%s), by round: %s; the median round's gain %.1f µs", keptAwakeBy(), r, gain*1e6)
	if gain > max(2e-6, 0.10*awake) {
		return gain, true
	}
	c.Excuse("host.cpu_wakeups", fmt.Sprintf("pgbench gains %.1f µs a transaction with the CPUs kept awake, within the floor: waking costs nothing here", gain*1e6))
	c.Excuse("host.cpu_wakeups_none", "the truth here is the other way")
	c.Expect(who+" says waking costs nothing, as pgbench shows", saidNone, said)
	return gain, false
}

// finding is rep's finding of code, nil if none.
func finding(rep *result.Report, code string) *result.Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Code == code {
			return &rep.Findings[i]
		}
	}
	return nil
}
