//go:build linux

package hostile_test

import (
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/itest/hostile"
	"github.com/narrows/narrows/internal/wire"
)

// Every client command that reaches an agent, run as the binary against
// an agent that misbehaves, is held to the client's contract:
//
//   - time: a test on an agent ends by Start + prepare + run + slack
//     (run: the duration, each pattern's or codec's with the timeout for
//     its I/O in flight; prepare, for a test that lays a file out: the
//     agent's --max-duration, at most max(60 s, its bytes at 5 MB/s);
//     slack: 2 × interval + --timeout + StopGrace), and a command of
//     several tests within its honest run's time and one test's more;
//   - memory: the peak resident size at most the same command's against
//     the real agent plus slackRSS;
//   - output: at most a row per interval the test can be worth;
//   - exit: 1 and one line naming the agent when the agent misbehaved;
//     130 (143) within StopGrace of SIGINT (SIGTERM), at once on a second;
//   - no control character on standard output or standard error.
//
// The runs start together and mostly wait; the ones that measure (the
// honest runs) take turns, two at a time, for the machine's two cores.

// The timing every command runs with: short, and one --timeout.
const (
	duration = time.Second
	interval = 200 * time.Millisecond
	timeout  = 2 * time.Second
)

// stopGrace is how long a stopped test waits for the agent's Done.
const stopGrace = 3 * time.Second

// slackRSS is what a hostile agent may make the client hold beyond what
// the same command holds against the real agent: its frames are at most
// wire.MaxFrame each and none is kept past the test's reports, so a few
// MiB at most, and the rest is the garbage collector's pace.
const slackRSS = 32 << 20

// margin is what starting a process, connecting and exiting take
// beyond a bound, on a busy machine.
const margin = 2 * time.Second

// command is a client command that reaches an agent, as the tests run it.
// ADDR is the agent, DIR a directory it allows disk tests in, OUT one for
// the doctor's files.
type command struct {
	name, args string
	// single: one test on the agent; its deadline bounds the whole run.
	single bool
	// prepare: a far test that lays a file out first (disk, commit).
	prepare bool
	// d and i are the test's duration and interval (net mtu's are its own).
	d, i time.Duration
	// names: its failure is one line naming the agent (watch counts
	// failures and carries on instead).
	names bool
}

var commands = []command{
	{name: "net stream", args: "net stream --to ADDR", single: true, names: true},
	{name: "net stream --reverse", args: "net stream --reverse --to ADDR", single: true, names: true},
	{name: "net rr", args: "net rr --to ADDR", single: true, names: true},
	{name: "net rr --under-load", args: "net rr --under-load --warmup 300ms --load-streams 2 --to ADDR", names: true},
	{name: "net commit", args: "net commit --ack write --size 1M --path DIR --to ADDR", single: true, prepare: true, names: true},
	{name: "net mtu", args: "net mtu --quick --direction up --to ADDR", single: true, d: 10 * time.Second, i: 10 * time.Second, names: true},
	{name: "disk --on", args: "disk --on ADDR --path DIR --profile custom --size 8M", single: true, prepare: true, names: true},
	{name: "watch", args: "watch --to ADDR --duration 3s --interval 500ms --stream-every 1s --stream-duration 300ms --stream-direction up --mtu-every 0"},
	{name: "plan backup", args: "plan backup --to ADDR --stage-duration 1s --streams 2 --compression lz4 --backup-path DIR --disk-size 8M --size 100GB", names: true},
	{name: "plan sync", args: "plan sync --to ADDR --stage-duration 1s --remote-path DIR --disk-size 1M --engine postgres", names: true},
	{name: "plan replica", args: "plan replica --to ADDR --stage-duration 1s --streams 2 --log-rate 5MB/s", names: true},
	{name: "doctor", args: "doctor --to ADDR --budget 20s --out OUT/doctor.jsonl --html OUT/doctor.html", names: true},
}

// argv is c's command line against addr.
func (c command) argv(addr, dir, out string, k kase) []string {
	a := strings.Fields(strings.NewReplacer("ADDR", addr, "DIR", dir, "OUT", out).Replace(c.args))
	if !strings.HasPrefix(c.name, "plan") && c.name != "doctor" && c.name != "net mtu" && c.name != "watch" {
		a = append(a, "--duration", duration.String(), "--interval", interval.String())
	}
	if k.json {
		a = append(a, "--json")
	}
	if k.html {
		a = append(a, "--html", out+"/run.html")
	}
	return append(a, "--timeout", timeout.String())
}

// deadline is the contract's for one of c's tests on an agent that
// announces maxDuration.
func (c command) deadline(maxDuration time.Duration) time.Duration {
	d, i := duration, interval
	if c.d > 0 {
		d, i = min(c.d, maxDuration), min(c.i, maxDuration)
	}
	var prepare time.Duration
	if c.prepare {
		prepare = min(maxDuration, time.Minute) // the files here are small: 60 s
	}
	return prepare + (d + timeout) + 2*i + timeout + stopGrace
}

// outBound is the most standard output c's run may be worth: what the
// honest run wrote, twice over, and a row of 256 bytes for every report
// the client takes from a test (one each interval of its run, and a few
// more: client.BoundsOf) and as many again.
func (c command) outBound(honest int64) int64 {
	d, i := duration, interval
	if c.d > 0 {
		d, i = c.d, c.i
	}
	reports := int64((d+timeout+i-1)/i) + 2 + 8
	return 2*honest + 2*reports*256
}

// kase is one run against a hostile agent.
type kase struct {
	mode        hostile.Mode
	maxDuration time.Duration // the agent's announced limit (0: 10 min)
	refusal     string
	signals     []syscall.Signal
	gap         time.Duration // between signals
	json        bool
	html        bool // the HTML report keeps the run's records
	// code is the exit wanted; codeAny: 0 or 1 (plan, doctor, watch carry
	// on past a step that failed).
	code int
}

const codeAny = -100

func (k kase) String() string {
	var s []string
	for m, n := range modeNames {
		if k.mode&m != 0 {
			s = append(s, n)
		}
	}
	if len(s) == 0 {
		s = append(s, "Honest")
	}
	slices.Sort(s)
	name := strings.Join(s, "+")
	if k.refusal != "" {
		name += "(" + k.refusal + ")"
	}
	if k.maxDuration > 0 {
		name += fmt.Sprintf(",max-duration=%s", k.maxDuration)
	}
	for _, sig := range k.signals {
		name += "," + strings.ToUpper(unixName(sig))
	}
	if k.json {
		name += ",json"
	}
	if k.html {
		name += ",html"
	}
	return name
}

var modeNames = map[hostile.Mode]string{hostile.Endless: "Endless", hostile.Drip: "Drip", hostile.Silent: "Silent",
	hostile.NoDoneAfterStop: "NoDoneAfterStop", hostile.Escapes: "Escapes", hostile.PreAuthRefusal: "PreAuthRefusal",
	hostile.HugeFacts: "HugeFacts", hostile.OversizedWelcome: "OversizedWelcome"}

func unixName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "sigint"
	case syscall.SIGTERM:
		return "sigterm"
	}
	return s.String()
}

var (
	sigint  = []syscall.Signal{syscall.SIGINT}
	sigterm = []syscall.Signal{syscall.SIGTERM}
	twice   = []syscall.Signal{syscall.SIGINT, syscall.SIGINT}
)

// cases are the runs of each command against a hostile agent.
func cases(c command) []kase {
	fails := 1
	if !c.single && c.name != "net rr --under-load" {
		fails = codeAny
	}
	ks := []kase{
		{mode: hostile.Endless, code: fails},
		// The agent's Done gives a reason: a failure for most commands, a
		// note for some (net mtu, watch).
		{mode: hostile.Escapes, code: codeAny},
	}
	if c.single {
		// The fake itself, honest: each kind of data connection and
		// report is played well enough for the command to succeed, so
		// that what fails in the other modes is their misbehaviour.
		ks = append(ks, kase{mode: hostile.Honest, code: 0})
	}
	small := 4 * time.Second // a prepare bound a test can wait out
	switch c.name {
	case "net stream":
		ks = append(ks,
			kase{mode: hostile.Endless, html: true, code: 1},
			kase{mode: hostile.Silent, code: 1},
			kase{mode: hostile.Drip, signals: sigint, code: 130},
			kase{mode: hostile.NoDoneAfterStop, signals: sigint, code: 130},
			kase{mode: hostile.NoDoneAfterStop, signals: sigterm, code: 143},
			kase{mode: hostile.Escapes, json: true, code: 1},
			kase{mode: hostile.HugeFacts | hostile.Escapes, code: 1},
			kase{mode: hostile.OversizedWelcome, code: 1},
		)
		// A refusal of the secret or the version is the person's to fix
		// (2); busy, or a code this client does not know, is a failure (1).
		for r, code := range map[string]int{wire.CodeBusy: 1, wire.CodeAuthLimit: 2, wire.CodeVersion: 2, "bogus\x1b[31m": 1} {
			ks = append(ks, kase{mode: hostile.PreAuthRefusal, refusal: r, code: code})
		}
	case "net rr":
		ks = append(ks,
			kase{mode: hostile.Silent, code: 1},
			kase{mode: hostile.NoDoneAfterStop, signals: sigint, code: 130},
			kase{mode: hostile.HugeFacts, code: 0},
		)
	case "net commit", "disk --on":
		if c.name == "disk --on" {
			ks = append(ks, kase{mode: hostile.Endless, html: true, code: 1})
		}
		ks = append(ks,
			kase{mode: hostile.Silent, maxDuration: small, code: 1},
			kase{mode: hostile.Drip, maxDuration: small, code: 1},
			kase{mode: hostile.Drip, signals: sigint, code: 130},
			kase{mode: hostile.Drip, signals: twice, gap: 200 * time.Millisecond, code: 130},
			kase{mode: hostile.Drip, signals: sigterm, code: 143},
			kase{mode: hostile.NoDoneAfterStop, signals: sigint, code: 130},
		)
	case "net rr --under-load", "plan replica", "doctor":
		ks = append(ks, kase{mode: hostile.NoDoneAfterStop, signals: sigint, code: 130})
	}
	return ks
}

// onlyFlag picks runs by name (COMMAND/CASE), as -run cannot: every run
// starts before the first subtest does.
var onlyFlag = flag.String("only", "", "run only the commands and cases whose name (COMMAND/CASE) matches this regular expression")

// TestHostileAgent runs every command against the real agent and against
// hostile ones (cases), all at once, then holds each hostile run to the
// contract, measured against the honest one.
func TestHostileAgent(t *testing.T) {
	only := regexp.MustCompile(*onlyFlag)
	bin := itest.Binary(t) // built before any run's clock starts
	type job struct {
		k    kase
		addr string
		wait func() *outcome
	}
	honest := map[string]func() *outcome{}
	jobs := map[string][]job{}
	// The commands that measure longest (the doctor, the plans) take the
	// first turns at the cores: the others fit around them.
	for _, c := range slices.Backward(commands) {
		var ks []kase
		for _, k := range cases(c) {
			if only.MatchString(c.name + "/" + k.String()) {
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 && !only.MatchString(c.name+"/RealAgent") {
			continue
		}
		dir := t.TempDir()
		agent := itest.StartAgent(t, []string{"--disk-path", dir})
		honest[c.name] = startHeavy(bin, run{args: c.argv(agent.Addr, dir, t.TempDir(), kase{}), limit: 90 * time.Second, check: true})
		for _, k := range ks {
			a := hostile.New(t, hostile.Config{Mode: k.mode, MaxDuration: k.maxDuration, Refusal: k.refusal})
			r := run{args: c.argv(a.Addr, hostile.DiskPath, t.TempDir(), k), signals: k.signals, after: 500 * time.Millisecond,
				gap: k.gap, ready: a.Started(), limit: k.limit(c)}
			var w func() *outcome
			if k.measures() {
				w = startHeavy(bin, r)
			} else {
				w = start(bin, r)
			}
			jobs[c.name] = append(jobs[c.name], job{k, a.Addr, w})
		}
	}
	for _, c := range commands {
		if honest[c.name] == nil {
			continue
		}
		t.Run(c.name+"/RealAgent", func(t *testing.T) {
			o := honest[c.name]()
			t.Logf("%s", o)
			if o.code != 0 || o.killed != "" {
				t.Errorf("against the real agent: %s", o)
			}
			for _, l := range o.stderr.lines() {
				if strings.HasPrefix(l, "narrows: invariant broken: ") {
					t.Errorf("against the real agent: %s", l)
				}
			}
		})
	}
	for _, c := range commands {
		for _, j := range jobs[c.name] {
			t.Run(c.name+"/"+j.k.String(), func(t *testing.T) {
				h := honest[c.name]()
				o := j.wait()
				t.Logf("%s", o)
				check(t, c, j.k, j.addr, h, o)
			})
		}
	}
}

// measures says the run moves data as an honest one does, to its end.
func (k kase) measures() bool {
	return k.signals == nil && k.mode&(hostile.Endless|hostile.Drip|hostile.Silent|hostile.PreAuthRefusal|hostile.OversizedWelcome) == 0
}

// limit is where a run is killed: well past any bound it is held to.
func (k kase) limit(c command) time.Duration {
	if c.single {
		return min(c.deadline(or(k.maxDuration, 10*time.Minute))+10*time.Second, 40*time.Second)
	}
	return 40 * time.Second
}

func or(d, dflt time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return dflt
}

// bound is how long a run that ends by itself may take.
func (k kase) bound(c command, honest *outcome) time.Duration {
	switch {
	case k.mode&(hostile.PreAuthRefusal|hostile.OversizedWelcome) != 0:
		return timeout + margin
	case k.mode&hostile.Endless != 0:
		// Its flood is past any bound on frames within milliseconds; the
		// test is stopped there and nothing more is waited for (but a
		// Stop's grace, where a command stops a test on a second session).
		return honest.took + stopGrace + margin
	case c.single:
		return c.deadline(or(k.maxDuration, 10*time.Minute)) + margin
	}
	return honest.took + commands[0].deadline(10*time.Minute) + margin
}

func check(t *testing.T, c command, k kase, addr string, h, o *outcome) {
	t.Helper()
	if o.killed != "" {
		t.Errorf("killed: %s", o.killed)
	}
	// Time.
	switch {
	case len(k.signals) > 1:
		if most := k.gap + time.Second; o.afterSignal > most {
			t.Errorf("exited %s after the first SIGINT, the second %s later; want at once (within %s)", o.afterSignal, k.gap, most)
		}
	case len(k.signals) == 1:
		if most := stopGrace + margin; o.afterSignal > most {
			t.Errorf("exited %s after %s; want within %s (the stop grace %s)", o.afterSignal, unixName(k.signals[0]), most, stopGrace)
		}
	default:
		if most := k.bound(c, h); o.took > most {
			t.Errorf("took %s; want at most %s", o.took, most)
		}
	}
	// Memory and output, against the honest run's.
	if most := h.rss + slackRSS; o.rss > most {
		t.Errorf("peak RSS %s; want at most %s (%s against the real agent, and %s)", mib(o.rss), mib(most), mib(h.rss), mib(slackRSS))
	}
	if most := c.outBound(h.stdout.n); o.stdout.n > most {
		t.Errorf("wrote %d bytes on stdout; want at most %d (%d against the real agent)", o.stdout.n, most, h.stdout.n)
	}
	// How it ended.
	switch {
	case k.code == codeAny && o.code != 0 && o.code != 1:
		t.Errorf("exit %d; want 0 or 1", o.code)
	case k.code != codeAny && o.code != k.code:
		t.Errorf("exit %d; want %d", o.code, k.code)
	}
	lines := o.stderr.lines()
	misbehaved := k.mode&(hostile.Endless|hostile.Silent|hostile.Drip) != 0 && len(k.signals) == 0
	switch {
	case k.mode&hostile.PreAuthRefusal != 0:
		if len(lines) != 1 {
			t.Errorf("stderr has %d lines; want one: %q", len(lines), o.stderr.String())
		}
	case o.code == 1 && c.names && k.mode&hostile.Escapes == 0:
		if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "agent at "+addr) {
			t.Errorf("the last line on stderr does not name the agent at %s: %q", addr, tail(o.stderr.String(), 500))
		}
		if c.single {
			for _, l := range lines[:max(0, len(lines)-1)] {
				if !strings.HasPrefix(l, "narrows: notice: ") {
					t.Errorf("stderr has more than the one line saying why (and notices): %q", l)
				}
			}
		}
	case misbehaved && c.names:
		// A plan or the doctor carries on past a step that failed, and
		// says which, and why.
		if !strings.Contains(o.stderr.String(), "agent at "+addr) {
			t.Errorf("nothing on stderr names the agent at %s: %q", addr, tail(o.stderr.String(), 500))
		}
	}
	// Nothing the terminal would obey.
	for _, s := range []struct {
		name string
		c    *capture
	}{{"stdout", &o.stdout}, {"stderr", &o.stderr}} {
		if n := s.c.controls(); n > 0 {
			t.Errorf("%d control characters on %s: %s", n, s.name, firstControl(s.c.String()))
		}
	}
}

// firstControl quotes the line of s where its first control character is.
func firstControl(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if controls(l) > 0 {
			return fmt.Sprintf("%q", tail(l, 200))
		}
	}
	return ""
}
