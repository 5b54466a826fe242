//go:build linux

package experiments

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
//
// CI runs host/wakeups-as-is (the pair, both ends), host/job-pgbench (a
// job, its password unprinted), host/wakeups-kept-awake and
// host/wakeups-one-cpu: between them every host code both ways. The
// others (--dsn to PostgreSQL and MariaDB, the job kept awake, the busy
// machine) say the same codes by the same judgement and run in the whole
// matrix: each holds the machine to itself for one to three minutes, and
// with them the CI subset ran past its 30 minutes on a slow machine
// (stop 44's CI run).
var hostScenarios = []Scenario{
	{
		Name: "host/wakeups-as-is", CI: true, Share: testbed.Slots,
		Question: "is this host's power saving what slows a chatty session?",
		Truth: "the machine as it is (on this project's VMs: cpuidle haltpoll, guest halt polling off, a halted vCPU woken by the hypervisor); " +
			"the truth is pgbench -c 1 and mariadb-slap --concurrency=1 SELECT 1 on loopback, each in rounds of a run with the CPUs as they are and one with them kept awake, two before narrows' run and two after",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			pg, l, addr := wakeupBed(c)
			my := loopbackMaria(c)
			pgb, slap := pgbenchClient(c, pg), slapClient(c, my)
			var rep *result.Report
			around(c, func() {
				rep = c.Narrows(l.A, "host", "--to", addr, "--duration", "50s")
				logBlocks(c, rep)
			}, pgb, slap)
			costs := wakeupTruth(c, pgb, "narrows", c.Said("host.cpu_wakeups_none") && !c.Said("host.cpu_wakeups"), codes(rep))
			if !costs {
				return
			}
			f := finding(rep, "host.cpu_wakeups")
			if f == nil {
				return // the Say list fails the row
			}
			c.T.Logf("%s: %s", slap.name, slap.rounds)
			// What narrows says is the wake-ups' own cost, with the least
			// work after each (its threads' awake round trip, both ends'
			// mean), and it says so: "a client and a server that do more
			// for each query pay more than this". mariadb-slap's, the
			// lighter client, is held between its gain less its own work's
			// slowdown and its whole gain (holdWake); pgbench's, whose
			// backend does more after each wake-up, as what it is said to
			// be, the least: never more than its gain (holdLeast). On
			// 2026-11-29 the pair read 0.755 of pgbench's whole gain (52.3
			// against 69.3 µs, 17 µs where pgbench's awake work beyond
			// narrows' is 7), 0.843 of slap's: pgbench's work after a
			// wake-up ran over twice as slow as awake, past what
			// holdWake allows. Its queries' own figure is --dsn's and the
			// job's (host/wakeups-postgres, host/job-pgbench).
			pred := f.Values["per_round_trip_seconds"]
			least := pairAwake(rep.Host)
			holdLeast(c, "what waking adds to a round trip, predicted", pred, pgb, least)
			holdWake(c, "what waking adds to a round trip, predicted", pred, slap, least)
			c.Expect("both ends measured, by experiment on each", rep.Host != nil && rep.Host.Agent != nil && rep.Host.Agent.Wakeup != nil && !rep.Host.SameHost, "agent side measured")
		},
	},
	{
		Name: "host/wakeups-postgres", Share: testbed.Slots,
		Question: "what does waking idle CPUs add to each of my database's queries?",
		Truth: "narrows host --dsn to a PostgreSQL on this host's loopback: its own queries timed as is and with the CPUs kept awake; " +
			"the truth is pgbench -c 1 SELECT 1 to the same server, in rounds of a run as is and one awake, two before narrows' run and two after",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			pg := loopbackPG(c)
			dbWakeups(c, pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword), pgbenchClient(c, pg))
		},
	},
	{
		Name: "host/wakeups-mariadb", Share: testbed.Slots,
		Question: "what does waking idle CPUs add to each of my database's queries?",
		Truth: "narrows host --dsn to a MariaDB on this host's loopback: its own queries timed as is and with the CPUs kept awake; " +
			"the truth is mariadb-slap --concurrency=1 SELECT 1 to the same server, in rounds of a run as is and one awake, two before narrows' run and two after",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			m := loopbackMaria(c)
			dbWakeups(c, m.DSN(m.Source, "narrows", dbserver.NarrowsPassword), slapClient(c, m))
		},
	},
	{
		Name: "host/job-pgbench", CI: true, Share: testbed.Slots,
		Question: "what would keeping this host's CPUs awake give my own job?",
		Truth: "narrows host -- pgbench -c 1 -t 50000 SELECT 1 (a job of fixed work, its password in its command line) to a PostgreSQL on this host's loopback, " +
			"run whole as is and with the CPUs kept awake; the truth is pgbench -c 1 SELECT 1's own rounds, a run as is and one awake, two before narrows' run and two after",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			pg := loopbackPG(c)
			pgb := pgbenchClient(c, pg)
			var rep *result.Report
			var res itest.Result
			args := pgbenchJob(c, pg)
			around(c, func() {
				rep, _, res = c.NarrowsExit(nil, 0, args...)
				logJob(c, rep)
			}, pgb)
			c.Expect("the job's command line, password and all, is never printed", !strings.Contains(res.Stdout+res.Stderr, dbserver.NarrowsPassword), "no password in the output")
			if !wakeupTruth(c, pgb, "narrows", c.Said("host.cpu_wakeups_none") && !c.Said("host.cpu_wakeups"), codes(rep)) {
				return
			}
			f := finding(rep, "host.cpu_wakeups")
			if f == nil {
				return // the Say list fails the row
			}
			// The job is the client itself: its gain a query is held to
			// pgbench's whole gain, within issue 28's 15%.
			pred, truth := f.Values["per_query_seconds"], pgb.gain()
			c.Within("what keeping the CPUs awake gave the job, a query / pgbench -c 1's own gain", pred, truth, 0.85, 1.15,
				"issue 28: the job's run as is less its run awake, over its 50,000 queries, within 15% of the client's own rounds around it")
		},
	},
	{
		Name: "host/job-mariadb", Share: testbed.Slots,
		Question: "what would keeping this host's CPUs awake give my own job?",
		Truth: "narrows host -- mariadb-slap --concurrency=1 --number-of-queries=80000 SELECT 1 (its password in its command line) to a MariaDB on this host's loopback, " +
			"run whole as is and with the CPUs kept awake; the truth is mariadb-slap's own rounds, a run as is and one awake, two before narrows' run and two after. " +
			"Not in CI: host/job-pgbench holds the same code both ways there",
		Say:    []string{"host.cpu_wakeups"},
		NotSay: []string{"host.cpu_wakeups_none", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			m := loopbackMaria(c)
			slap := slapClient(c, m)
			slapPath, err := exec.LookPath("mariadb-slap")
			if err != nil {
				c.T.Fatal(err)
			}
			const n = 80_000
			var rep *result.Report
			var res itest.Result
			around(c, func() {
				args := append([]string{"host", "--json", "--queries", strconv.Itoa(n), "--duration", "70s", "--", slapPath}, itest.SlapArgs(m.Source.Port, n)...)
				rep, _, res = c.NarrowsExit(nil, 0, append(args, "-p"+dbserver.NarrowsPassword)...)
				logJob(c, rep)
			}, slap)
			c.Expect("the job's command line, password and all, is never printed", !strings.Contains(res.Stdout+res.Stderr, dbserver.NarrowsPassword), "no password in the output")
			if !wakeupTruth(c, slap, "narrows", c.Said("host.cpu_wakeups_none") && !c.Said("host.cpu_wakeups"), codes(rep)) {
				return
			}
			if f := finding(rep, "host.cpu_wakeups"); f != nil {
				c.Within("what keeping the CPUs awake gave the job, a query / mariadb-slap's own gain", f.Values["per_query_seconds"], slap.gain(), 0.85, 1.15,
					"issue 28: the job's run as is less its run awake, over its 80,000 queries, within 15% of the client's own rounds around it")
			}
		},
	},
	{
		Name: "host/job-kept-awake", Share: testbed.Slots,
		Question: "would keeping this host's CPUs awake speed up my own job, on a host already tuned?",
		Truth: "narrows host -- pgbench -c 1 -t 50000 SELECT 1 to a PostgreSQL on this host's loopback, with the CPUs kept awake for the whole run from outside narrows, " +
			"as tuned's latency-performance does (a CPU latency request of 0 held; where no cpuidle driver reads one, spinning idle-priority processes): nothing is left to gain",
		Say:    []string{"host.cpu_wakeups_none"},
		NotSay: []string{"host.cpu_wakeups", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			pg := loopbackPG(c)
			release := keepAwake(c)
			defer release()
			rep := c.Narrows(nil, pgbenchJob(c, pg)...)
			logJob(c, rep)
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
		Name: "host/wakeups-busy", Share: testbed.Slots,
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

// jobQueries is the job's queries: about 3.3 s a run as is here, 0.8 s
// awake, so four pairs (5 s idle before each run as is) fit 60 s.
const jobQueries = 50_000

// pgbenchJob is narrows host's arguments for a job of pgbench -c 1 -t
// jobQueries SELECT 1 to pg's primary, within 60 s, as the narrows user,
// its password in the command line, run as root (pgbench needs no user of
// its own).
func pgbenchJob(c *Case, pg *dbserver.Postgres) []string {
	q := strconv.Itoa(jobQueries)
	return []string{"host", "--json", "--queries", q, "--duration", "60s", "--",
		filepath.Join(pg.Bin, "pgbench"), "-n", "-c", "1", "-M", "simple", "-t", q, "-f", select1Script(c, pg, "job"), pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword)}
}

// select1Script is a pgbench script of SELECT 1 in a directory of pg's
// (name), removed with its servers.
func select1Script(c *Case, pg *dbserver.Postgres, name string) string {
	dir, err := pg.ScratchDir(name)
	if err != nil {
		c.T.Fatal(err)
	}
	script := filepath.Join(dir, "select1.sql")
	if err := os.WriteFile(script, []byte("SELECT 1;\n"), 0o644); err != nil {
		c.T.Fatal(err)
	}
	return script
}

// logJob logs narrows host's runs of the job, as is/awake by pair.
func logJob(c *Case, rep *result.Report) {
	if rep.Host == nil || rep.Host.Here == nil || rep.Host.Here.Wakeup == nil {
		return
	}
	w := rep.Host.Here.Wakeup
	var b strings.Builder
	for i := 0; i+1 < len(w.Blocks); i += 2 {
		fmt.Fprintf(&b, " %.3f/%.3f", w.Blocks[i].Mean.D().Seconds(), w.Blocks[i+1].Mean.D().Seconds())
	}
	c.T.Logf("narrows host, the job: seconds a run as is/awake by pair:%s; %s ± %s a run (%s)", b.String(),
		metric.FormatDuration(2*w.PerWake.D()), metric.FormatDuration(2*w.PerWakeMargin.D()), w.Verdict)
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

// gain is the median round's gain with the CPUs kept awake (of an even
// number, the mean of the middle two).
func (r rounds) gain() float64 { return metric.Median(r.gains()) }

// gains is each round's gain, in order: as is less awake.
func (r rounds) gains() []float64 {
	d := make([]float64, len(r.asis))
	for i := range d {
		d[i] = r.asis[i] - r.awake[i]
	}
	return d
}

// String is the rounds in µs: "58.5/15.0 57.0/15.0 …".
func (r rounds) String() string {
	var b strings.Builder
	for i := range r.asis {
		fmt.Fprintf(&b, "%.1f/%.1f ", r.asis[i]*1e6, r.awake[i]*1e6)
	}
	return strings.TrimSpace(b.String())
}

// client is a truth's C client: one round of it (as is, then with the
// CPUs kept awake: seconds a round trip each) and the rounds it has run.
type client struct {
	name   string // "pgbench -c 1", for the log
	round  func() (asis, awake float64)
	rounds rounds
}

func (cl *client) run() { cl.rounds.add(cl.round()) }

func (cl *client) gain() float64 { return cl.rounds.gain() }

// wakeOnly is the client's gain less the most its own work's slowdown
// has added to it here, beside a measure whose round trip takes least
// awake (seconds). On this project's VMs the work just after a wake-up
// runs up to half as fast as awake, so a client pays again, as is, up to
// what its round trip takes awake beyond least: pgbench's round trip took
// 9.5 µs more than narrows' threads' awake and up to 19 µs more as is;
// narrows host --dsn's queries to PostgreSQL 4.5 and 8-9 µs more; a C
// echo pair whose echo touched 3,000 cache lines a message, 1.6 and 5 µs
// more. In pgbench's faster minutes as is, less: its gain was 43.7 µs
// beside narrows' threads' 40.2.
func (cl *client) wakeOnly(least float64) float64 {
	return cl.gain() - max(0, metric.Median(cl.rounds.awake)-least)
}

// pairAwake is narrows' threads' awake round trip (seconds), both ends'
// mean: the least work a round trip does, beside which the clients'
// extra work is measured (client.wakeOnly).
func pairAwake(h *result.Host) float64 {
	return (h.Here.Wakeup.Awake.D().Seconds() + h.Agent.Wakeup.Awake.D().Seconds()) / 2
}

// holdWake holds pred, what narrows says the wake-ups cost (what, in
// words), to the client's: it lies between the client's gain less the
// most its own work's slowdown adds (wakeOnly, beside narrows' awake
// round trip, least) and its whole gain (no slowdown), within issue 28's
// 15% of either end. Every ratio is logged.
func holdWake(c *Case, what string, pred float64, cl *client, least float64) {
	lo, hi, got := wakeRatios(c, what, pred, cl, least)
	c.Expect(what+" within 15% of "+cl.name+"'s gain with the CPUs kept awake, less at most its own work's slowdown beyond narrows' (0.85× its gain less that work, up to 1.15× its whole gain)",
		pred >= 0.85*lo && pred <= 1.15*hi, got)
}

// holdLeast holds pred, what narrows says is the least the wake-ups cost
// (what, in words), to a client that does more after each wake-up than
// narrows' threads: no more than its whole gain, within issue 28's 15%.
// Its ratios to the client's gain, whole and less its own work's
// slowdown (wakeOnly, beside least), are logged.
func holdLeast(c *Case, what string, pred float64, cl *client, least float64) {
	_, hi, got := wakeRatios(c, what, pred, cl, least)
	c.Expect(what+", the least a round trip pays, no more than "+cl.name+"'s gain with the CPUs kept awake (up to 1.15× it)", pred <= 1.15*hi, got)
}

// wakeRatios is the client's gain less its own work's slowdown (lo,
// beside least) and its whole gain (hi), and pred's ratio to each in
// words, logged.
func wakeRatios(c *Case, what string, pred float64, cl *client, least float64) (lo, hi float64, got string) {
	lo, hi = cl.wakeOnly(least), cl.gain()
	got = fmt.Sprintf("%.1f µs: %.3f of %.1f, %.3f of %.1f", pred*1e6, pred/lo, lo*1e6, pred/hi, hi*1e6)
	c.T.Logf("%s, against %s's: %s", what, cl.name, got)
	return lo, hi, got
}

// aroundOnce runs narrows (run) between the clients' rounds: two rounds
// of each before it, and two of each after, in the reverse order. This
// machine's wake-ups are not one cost: pgbench's rounds as is run at
// 60-65 µs for a minute, then at 72-82 for 10-30 s, pinned to two CPUs or
// not, as the hypervisor has it (a CI run read narrows' 41.0 µs beside
// pgbench's three rounds after it at 64.7, 80.0 and 81.3 µs as is: 0.70
// of their median gain). Rounds after narrows sample other seconds than
// narrows did; rounds on either side sample the minutes around its run
// alike (replayed on six minutes of pgbench's pace here, the ratio's
// spread was 0.075 with three rounds after, 0.066 with one on either
// side). And a round may still run near the awake pace (mariadb-slap's
// first round, a minute after its server started, read 35.7 µs as is
// against 61.2 in the next): two on either side, and their median gain,
// leave one such round out.
func aroundOnce(run func(), clients ...*client) {
	for range 2 {
		for _, cl := range clients {
			cl.run()
		}
	}
	run()
	for range 2 {
		for _, cl := range slices.Backward(clients) {
			cl.run()
		}
	}
}

// moved is how far the client's rounds before narrows' run and after it
// disagree: the larger side's mean gain over the smaller's (1 when they
// agree; +Inf when a side gained nothing). aroundOnce's rounds: two before,
// two after.
func (r rounds) moved() float64 {
	if len(r.asis) != 4 {
		return 1
	}
	g := r.gains()
	before, after := (g[0]+g[1])/2, (g[2]+g[3])/2
	if min(before, after) <= 0 {
		return math.Inf(1)
	}
	return max(before, after) / min(before, after)
}

// steadyMoved is the most a client's rounds before narrows' run and after
// it may disagree for narrows' figure to be held to them: issue 28's 15%,
// the bound that figure is held to.
const steadyMoved = 1.15

// around runs narrows (run) between the clients' rounds (aroundOnce), and
// once more when a client's rounds before narrows' run and after it
// disagree by more than steadyMoved: this machine's pace moves for tens
// of seconds at a time (pgbench -c 1's gain 97 µs in the two rounds before
// a job's run and 74 in the two after, the job's own pairs 81 falling to
// 71 between), and a figure taken between two paces is held to neither.
// The first window's rounds and what narrows said in it are dropped
// (logged); the second window is judged whatever its rounds, its own
// drift logged. run logs what it measured in each window.
func around(c *Case, run func(), clients ...*client) {
	for try := 1; ; try++ {
		said := maps.Clone(c.said)
		for _, cl := range clients {
			cl.rounds = rounds{}
		}
		aroundOnce(run, clients...)
		var moved []string
		for _, cl := range clients {
			if m := cl.rounds.moved(); m > steadyMoved {
				moved = append(moved, fmt.Sprintf("%s's rounds %s: %.2f× between before and after", cl.name, cl.rounds, m))
			}
		}
		if len(moved) == 0 {
			return
		}
		if try == 2 {
			c.T.Logf("the machine's pace moved in this window too, judged as it is: %s", strings.Join(moved, "; "))
			return
		}
		c.T.Logf("the machine's pace moved while narrows ran (%s): its figure is held to neither pace; once more", strings.Join(moved, "; "))
		c.said = said
	}
}

// settleAsIs is how long a truth's run as is runs before it counts: as
// narrows host's Settle (after 3 s, one of its blocks as is in four
// still ran near the awake pace).
const settleAsIs = 5

// pgbenchClient is pgbench -c 1 SELECT 1 on loopback: a round is a run
// with the CPUs as they are (10 s, of which the last 5 count, after
// settleAsIs) and one with them kept awake (3 s, the last 2 counting),
// each one's mean seconds a transaction. Over TCP without TLS
// (PGSSLMODE=disable), as the job's pgbench and narrows host --dsn
// connect: the server has ssl on, and pgbench's default (prefer) took
// TLS, whose work on every query the job's pgbench did not do (the
// truth's rounds read 25-32 µs a query awake beside the job's 18-20, and
// the job's gain 0.78 and 0.89 of theirs, in two runs of host/job-pgbench
// in a slow hour).
func pgbenchClient(c *Case, pg *dbserver.Postgres) *client {
	script := select1Script(c, pg, "pgbench")
	run := func(secs, last int) float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := pg.Tool(ctx, pg.Primary, []string{"PGPASSWORD=" + dbserver.SuperPassword, "PGSSLMODE=disable"}, "pgbench", "-n", "-c", "1", "-M", "simple", "-T", strconv.Itoa(secs), "-P", "1",
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
	return &client{name: "pgbench -c 1", round: func() (float64, float64) {
		asis := run(settleAsIs+5, 5)
		release := keepAwake(c)
		defer release()
		return asis, run(3, 2)
	}}
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

// slapClient is the truth's client of the other engine: mariadb-slap
// --concurrency=1 SELECT 1 on loopback: a round is a run that settles
// (settleAsIs as is, about 1 s awake) and one that counts (about 5 s as
// is, 2 s awake), each one's mean seconds a query.
func slapClient(c *Case, m *dbserver.MariaDB) *client {
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
	return &client{name: "mariadb-slap --concurrency=1", round: func() (float64, float64) {
		// As is, about 60 µs a query here: settleAsIs, then 4.8 s.
		run(settleAsIs * 1_000_000 / 60)
		asis := run(80_000)
		release := keepAwake(c)
		defer release()
		run(50_000)
		return asis, run(100_000)
	}}
}

var progressRate = regexp.MustCompile(`progress: [0-9.]+ s, ([0-9.]+) tps`)

// progressLatencies are the seconds a transaction of pgbench -P's lines,
// read as one client's: 1/tps, its transactions one after another. Not
// the line's latency: with the CPUs kept awake pgbench's answers are at
// times there before it waits for them, and its latency then reads
// near zero (lat 0.000-0.003 ms at 37-44k tps here, where 1/tps is 23-27
// µs; as is too, once, 1.0 and 2.2 µs among 72-73). pgbench reads its
// clock lazily, reusing a reading until it waits (pg_time_now_lazy):
// the likely cause, not proven here. The rate counts transactions done.
func progressLatencies(out string) []float64 {
	var l []float64
	for _, m := range progressRate.FindAllStringSubmatch(out, -1) {
		if tps, err := strconv.ParseFloat(m[1], 64); err == nil && tps > 0 {
			l = append(l, 1/tps)
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
		if err := itest.StartTied(p); err != nil {
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
		if err := itest.StartTied(p); err != nil {
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
			pgb := pgbenchClient(c, pg)
			var rep *result.Report
			around(c, func() {
				rep = c.Narrows(l.A, "doctor", "--to", addr, "--budget", "4m", "--out", filepath.Join(c.T.TempDir(), "doctor.jsonl"))
			}, pgb)
			answer := hostsAnswer(rep)
			costs := wakeupTruth(c, pgb, "doctor's hosts answer", answer == "host.cpu_wakeups_none", answer)
			if !costs {
				return
			}
			c.Expect("doctor's hosts answer is the wake-ups", answer == "host.cpu_wakeups", answer)
			var h *result.Host
			for _, st := range rep.Doctor.Steps {
				if st.Report != nil && st.Report.Host != nil {
					h = st.Report.Host
				}
			}
			if f := finding(rep, "host.cpu_wakeups"); f != nil && h != nil && h.Here.Wakeup != nil && h.Agent != nil && h.Agent.Wakeup != nil {
				holdWake(c, "what waking adds to a round trip, predicted by doctor", f.Values["per_round_trip_seconds"], pgb, pairAwake(h))
			}
		},
	},
	{
		Name: "doctor/hosts-kept-awake", Share: testbed.Slots,
		Question: "what on these hosts should change, on hosts already tuned? (doctor, with --budget 4m)",
		Truth: "as doctor/hosts, with both machines' CPUs kept awake for the whole run from outside narrows, as tuned's latency-performance does " +
			"(a CPU latency request of 0 held; where no cpuidle driver reads one, spinning idle-priority processes): nothing is left to gain at either end",
		Say:    []string{"host.cpu_wakeups_none"},
		NotSay: []string{"host.cpu_wakeups", "host.cpu_wakeups_unjudged"},
		Run: func(c *Case) {
			c.host.close()
			l, addr := wakeupLine(c) // no truth to run: nothing is left to gain
			release := keepAwake(c)
			defer release()
			rep := c.Narrows(l.A, "doctor", "--to", addr, "--budget", "4m", "--out", filepath.Join(c.T.TempDir(), "doctor.jsonl"))
			answer := hostsAnswer(rep)
			c.Expect("doctor's hosts answer is that waking costs nothing", answer == "host.cpu_wakeups_none", answer)
		},
	},
}

// hostsAnswer is doctor's answer to "What on these hosts ...": its
// finding's code, or what it says where it has none.
func hostsAnswer(rep *result.Report) string {
	var answer string
	for _, a := range words.Answers(rep) {
		if strings.HasPrefix(a.Question, "What on these hosts") {
			answer = a.Else
			if a.Finding != nil {
				answer = a.Finding.Code
			}
		}
	}
	return answer
}

// dbWakeups runs narrows host on dsn's own queries, around the
// database's own C client's rounds (truth), and holds what it says waking
// adds to each to the client's gain with the CPUs kept awake, within issue
// 28's 15%. On a machine whose CPUs wake fast the client gains nothing
// beyond the floor: then narrows must say so.
func dbWakeups(c *Case, dsn string, truth *client) {
	var rep *result.Report
	around(c, func() {
		rep = c.Narrows(nil, "host", "--dsn", dsn, "--duration", "50s")
		logBlocks(c, rep)
	}, truth)
	var db *result.HostDatabase
	if rep.Host != nil {
		db = rep.Host.Database
	}
	c.Expect("this host's experiment timed the database's own queries, its server on this host", db != nil && db.Local, fmt.Sprintf("%+v", db))
	costs := wakeupTruth(c, truth, "narrows", c.Said("host.cpu_wakeups_none") && !c.Said("host.cpu_wakeups"), codes(rep))
	if !costs {
		return
	}
	f := finding(rep, "host.cpu_wakeups")
	if f == nil {
		return // the Say list fails the row
	}
	holdWake(c, "what waking adds to each of the database's queries, measured", f.Values["per_round_trip_seconds"], truth, rep.Host.Here.Wakeup.Awake.D().Seconds())
}

// wakeupBed is the wake-up scenarios' machine: the case's host watch
// stopped, a PostgreSQL on loopback for the truth, a line that lets the
// CPUs sleep, and an agent on its host B.
func wakeupBed(c *Case) (*dbserver.Postgres, *testbed.DelayLine, string) {
	c.host.close()
	pg := loopbackPG(c)
	l, addr := wakeupLine(c)
	return pg, l, addr
}

// wakeupLine is wakeupBed without the truth's PostgreSQL: a line that
// lets the CPUs sleep, and an agent on its host B.
func wakeupLine(c *Case) (*testbed.DelayLine, string) {
	l := c.Line(testbed.DelayLineOptions{LetCPUsSleep: true})
	return l, c.Agent(l.B)
}

// wakeupTruth logs a client's gain a round trip with the CPUs kept awake
// (its rounds run) and says whether it is beyond the floor narrows judges by.
// On a machine whose CPUs wake fast it is not: the code the scenario is
// for is not judged there, and who (narrows, doctor's answer) must have
// said that waking costs nothing (saidNone, shown as said).
func wakeupTruth(c *Case, cl *client, who string, saidNone bool, said string) (costs bool) {
	gain := cl.gain()
	awake := metric.Median(cl.rounds.awake)
	c.T.Logf("%s SELECT 1 on loopback, µs a round trip as is / with the CPUs kept awake (%s), by round: %s; the median round's gain %.1f µs", cl.name, keptAwakeBy(), cl.rounds, gain*1e6)
	if gain > max(2e-6, 0.10*awake) {
		return true
	}
	c.Excuse("host.cpu_wakeups", fmt.Sprintf("%s gains %.1f µs a round trip with the CPUs kept awake, within the floor: waking costs nothing here", cl.name, gain*1e6))
	c.Excuse("host.cpu_wakeups_none", "the truth here is the other way")
	c.Expect(who+" says waking costs nothing, as "+cl.name+" shows", saidNone, said)
	return false
}

// logBlocks logs narrows host's blocks at each end, µs a round trip, as
// the truth's rounds are logged: "as is/awake" by pair, the pairs not
// counted (settling, disturbed) marked "~".
func logBlocks(c *Case, rep *result.Report) {
	if rep.Host == nil {
		return
	}
	for _, e := range []struct {
		name string
		s    *result.HostSide
	}{{"this host", rep.Host.Here}, {"the agent", rep.Host.Agent}} {
		if e.s == nil || e.s.Wakeup == nil {
			continue
		}
		w := e.s.Wakeup
		var b strings.Builder
		for i := 0; i+1 < len(w.Blocks); i += 2 {
			mark := ""
			if w.Blocks[i].Settling || w.Blocks[i+1].Disturbed {
				mark = "~"
			}
			fmt.Fprintf(&b, " %s%.1f/%.1f", mark, w.Blocks[i].Mean.D().Seconds()*1e6, w.Blocks[i+1].Mean.D().Seconds()*1e6)
		}
		c.T.Logf("narrows host, %s: µs a round trip as is/awake by pair:%s; %s a wake-up (%s)", e.name, b.String(), metric.FormatDuration(w.PerWake.D()), w.Verdict)
	}
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
