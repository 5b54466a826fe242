//go:build linux

package experiments

import (
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// The verdict matrix (issue 25): every finding code narrows can print is
// held to a situation on the testbed where it is true and one where it is
// false, and every prediction to the real run it predicts. A Scenario is
// one situation with a known truth: the line (delay, rate, queue, loss,
// MTU), the hosts and servers on it, a workload, the narrows commands a
// DBA would run, the codes that must be said (true here), the codes that
// must not (false here), and figures held to the truth within a stated
// tolerance. `make verdicts` runs the whole matrix and writes its table
// into docs/verdicts.md; under `go test` (and so in CI) only the
// scenarios marked CI run, which between them still cover every code
// both ways (TestMatrixCoversEveryCode).

var (
	allFlag   = flag.Bool("all", false, "run the whole verdict matrix, not only its CI subset (or NARROWS_VERDICTS=all)")
	writeFlag = flag.String("write", "", "write the verdict table into this markdown file, between its verdicts markers")
	onlyFlag  = flag.String("scenario", "", "run only the scenarios whose names match this regular expression (with -all, any of them)")
)

// Scenario is one situation with a known truth.
type Scenario struct {
	Name     string // unique, "area/situation"
	Question string // the DBA's question
	Truth    string // what is true here, in words
	// Say are codes that must appear in some report the scenario makes;
	// NotSay codes that must appear in none.
	Say, NotSay []string
	// Quiet are codes about timing (a tail, jitter) whose truth holds
	// only while the machine is quiet: where the delay line wrote, or a
	// sleeping watch woke, QuietLate or more of the time over a
	// millisecond late, the hosts made a tail of their own, the truth is
	// no longer known, and they are not judged (the row says so).
	Quiet []string
	// CI puts the scenario in the subset `go test` runs.
	CI bool
	// Share is how many of the machine's timing shares the scenario
	// takes while it runs beside the others (testbed.Share; 0 is 1): a
	// scenario that waits on its line takes one; one that keeps a core
	// busy (a fast line, a database driven hard) takes two; one that
	// measures a disk or the machine's own speed takes testbed.Slots
	// and runs alone.
	Share int
	Run   func(c *Case)
}

// Case is one scenario's run: what narrows said, and the figures held to
// the truth.
type Case struct {
	T    *testing.T
	said map[string][]string // code → its summaries
	// excused are codes this run's own truth leaves unjudged, and why
	// (Excuse).
	excused map[string]string
	// figures are the predictions and readings held to the truth.
	figures []figure
	// rate is the line's rate in bit/s (0 = unshaped), for the
	// reports' invariants.
	rate float64
	// lines are the scenario's delay lines, for their own lateness; host
	// watches the machine's.
	lines []*testbed.DelayLine
	host  *hostWatch
	// broken are the invariants its reports broke.
	broken []string
	// cgroup, when set, is a cgroup narrows' own runs are started in
	// (cpuQuota): a container's limits.
	cgroup string
	// cgroupMount mounts the cgroup file system cgroup is in, at the
	// place the host has it, inside a namespace's own /sys.
	cgroupMount string
}

// hostWatch sleeps a millisecond at a time for as long as a scenario runs
// and counts the wake-ups over a millisecond late: a machine that wakes
// a sleeper that late makes tails of its own (its other work, or idle
// vCPUs that halt and wake late).
type hostWatch struct {
	mu           sync.Mutex
	sleeps, late int
	stop, done   chan struct{}
	once         sync.Once
}

func watchHost() *hostWatch {
	w := &hostWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(time.Millisecond)
			over := time.Since(t0) - time.Millisecond
			w.mu.Lock()
			w.sleeps++
			if over > time.Millisecond {
				w.late++
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// close ends the watch; a second close does nothing.
func (w *hostWatch) close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

func (w *hostWatch) share() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sleeps == 0 {
		return 0
	}
	return float64(w.late) / float64(w.sleeps)
}

// QuietLate is the share of a direction's packets the delay line may
// write over a millisecond late before a scenario's Quiet codes are not
// judged.
const QuietLate = 0.002

// lateShare is the largest share of packets any line of the case wrote
// over a millisecond late, either way, or of the host watch's sleeps that
// woke over a millisecond late.
func (c *Case) lateShare() float64 {
	worst := 0.0
	if c.host != nil {
		worst = c.host.share()
	}
	for _, l := range c.lines {
		st := l.Stats()
		for _, p := range []testbed.PathStats{st.AtoB, st.BtoA} {
			if p.Packets > 0 {
				worst = max(worst, float64(p.LateOver1ms)/float64(p.Packets))
			}
		}
	}
	return worst
}

type figure struct {
	name      string
	got, want float64
	lo, hi    float64
	why       string
}

func (f figure) ratio() float64 { return f.got / f.want }
func (f figure) ok() bool {
	r := f.ratio()
	return !math.IsNaN(r) && !math.IsInf(r, 0) && r >= f.lo && r <= f.hi
}

// Line makes the scenario's delay line, closed at its end.
func (c *Case) Line(o testbed.DelayLineOptions) *testbed.DelayLine {
	c.T.Helper()
	l := testbed.NewTestDelayLine(c.T, o)
	c.lines = append(c.lines, l)
	if r := l.Options.AtoB.RateBitsPerSecond; r > 0 {
		c.rate = float64(max(r, l.Options.BtoA.RateBitsPerSecond))
	}
	return l
}

// Link is a veth pair between two new namespaces (testbed.NewTestLink),
// its rate, where it has one, what the path can carry (as Line's).
func (c *Case) Link(o testbed.LinkOptions) *testbed.Link {
	c.T.Helper()
	ln := testbed.NewTestLink(c.T, o)
	if o.RateBitsPerSecond > 0 {
		c.rate = float64(o.RateBitsPerSecond)
	}
	return ln
}

// Agent starts `narrows serve` on h with extra flags and returns its
// address.
func (c *Case) Agent(h *testbed.Host, extra ...string) string {
	c.T.Helper()
	itest.StartAgent(c.T, append([]string{"--listen", agentAt(h)}, extra...), inNS(h)...)
	return agentAt(h)
}

// Narrows runs narrows on h (nil: this host) with args (--json added), fails the scenario
// unless it exits 0, records what its report says, and returns it.
func (c *Case) Narrows(h *testbed.Host, args ...string) *result.Report {
	c.T.Helper()
	rep, _, res := c.NarrowsExit(h, 0, args...)
	if rep == nil {
		c.T.Fatalf("narrows %s: no summary record:\n%s\n%s", strings.Join(args, " "), res.Stdout, res.Stderr)
	}
	return rep
}

// Exit codes NarrowsExit takes besides a code itself.
const (
	anyFailure = -1 // any code but 0
	anyExit    = -2 // any code at all
)

// NarrowsExit is Narrows for a run that must exit with code (or
// anyFailure, anyExit); its report
// is nil when it wrote none.
func (c *Case) NarrowsExit(h *testbed.Host, code int, args ...string) (*result.Report, []result.Interval, itest.Result) {
	c.T.Helper()
	if !slices.Contains(args, "--json") {
		args = append(args, "--json")
	}
	var wrap []string
	if h != nil { // nil: this host, outside the testbed's namespaces
		wrap = inNS(h)
	}
	if c.cgroup != "" {
		if h != nil {
			// ip netns exec mounts a /sys of its own, without the
			// cgroup file systems: mount them again in there, as a
			// container's runtime mounts them in the container.
			wrap = append(wrap, "sh", "-c", c.cgroupMount+` && exec "$@"`, "sh")
		}
		// A shell that moves itself in, then runs the rest.
		wrap = append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, c.cgroup}, wrap...)
	}
	// Every report is held to the invariants by the run itself (itest
	// asks every run to check what it emits), with the line's rate as
	// what the path can carry.
	return c.record(code, args, itest.RunWrapped(c.T, 10*time.Minute, c.pathEnv(), wrap, args...))
}

// pathEnv is the environment a run of narrows is given for the reports'
// invariants: the line's rate, what the path can carry.
func (c *Case) pathEnv() []string {
	if c.rate > 0 {
		return []string{fmt.Sprintf("%s=%.0f", itest.PathRate, c.rate)}
	}
	return nil
}

// record takes what a run of narrows (args) said: the invariants its
// reports broke, its exit code held to code, and its report's findings.
func (c *Case) record(code int, args []string, res itest.Result) (*result.Report, []result.Interval, itest.Result) {
	c.T.Helper()
	for _, v := range itest.Broken(res.Stderr) {
		c.broken = append(c.broken, strings.Join(args[:min(2, len(args))], " ")+": "+v)
	}
	if res.Code != code && !(code == anyFailure && res.Code > 0) && code != anyExit {
		c.T.Fatalf("narrows %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.Code, code, res.Stdout, res.Stderr)
	}
	rep, ivs, err := jsonl.Last(strings.NewReader(res.Stdout), "stdout")
	if err != nil {
		return nil, nil, res
	}
	c.Heard(rep)
	return rep, ivs, res
}

// Heard records the findings of a report (and of a doctor's steps).
func (c *Case) Heard(rep *result.Report) {
	for _, f := range rep.Findings {
		c.said[f.Code] = append(c.said[f.Code], f.Summary)
	}
	if d := rep.Doctor; d != nil {
		for _, st := range d.Steps {
			if st.Report != nil {
				c.Heard(st.Report)
			}
		}
	}
}

// Within holds a figure to the truth: got/want must lie in [lo, hi]; why
// says where the bound comes from.
func (c *Case) Within(name string, got, want, lo, hi float64, why string) {
	c.figures = append(c.figures, figure{name: name, got: got, want: want, lo: lo, hi: hi, why: why})
}

// Expect records a check that is true or false, not a ratio: ok must
// hold; got is what was seen, for the table.
func (c *Case) Expect(name string, ok bool, got string) {
	v := 0.0
	if ok {
		v = 1
	}
	c.figures = append(c.figures, figure{name: name + " (" + shorten(got) + ")", got: v, want: 1, lo: 1, hi: 1, why: "a yes-or-no check"})
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// Excuse leaves code unjudged in this run, saying why: what the line
// itself counted made the scenario's truth about it not hold this time
// (a run whose 2-packet queue dropped the queries' own packets has a
// tail of the path's, which "the round trips hold" cannot be held to).
func (c *Case) Excuse(code, why string) {
	if c.excused == nil {
		c.excused = map[string]string{}
	}
	c.excused[code] = why
}

// Said is whether some report of the case said code.
func (c *Case) Said(code string) bool { return len(c.said[code]) > 0 }

// row is one scenario's line of the table.
type row struct {
	s        Scenario
	said     []string
	figures  []figure
	problems []string
	notes    []string
	skipped  string
	took     time.Duration
}

func (r row) passed() bool { return r.skipped == "" && len(r.problems) == 0 }

// judge holds what c heard to the scenario's Say and NotSay, and its
// figures to their bounds.
func judge(s Scenario, c *Case) row {
	r := row{s: s, figures: c.figures}
	for code := range c.said {
		r.said = append(r.said, code)
	}
	sort.Strings(r.said)
	for _, b := range c.broken {
		r.problems = append(r.problems, "invariant broken: "+b)
	}
	late := c.lateShare()
	for _, code := range append(slices.Clone(s.Say), s.NotSay...) {
		if why, ok := c.excused[code]; ok {
			r.notes = append(r.notes, fmt.Sprintf("%s not judged: %s", code, why))
		}
	}
	for _, code := range s.Say {
		if _, ok := c.excused[code]; ok {
			continue
		}
		if slices.Contains(s.Quiet, code) && late >= QuietLate {
			r.notes = append(r.notes, fmt.Sprintf("%s not required: %.1f%% of packets or sleeps ran over 1 ms late (a busy machine)", code, 100*late))
			continue
		}
		if !c.Said(code) {
			r.problems = append(r.problems, "did not say "+code)
		}
	}
	for _, code := range s.NotSay {
		if _, ok := c.excused[code]; ok {
			continue
		}
		if slices.Contains(s.Quiet, code) && late >= QuietLate {
			r.notes = append(r.notes, fmt.Sprintf("%s not judged: %.1f%% of packets or sleeps ran over 1 ms late (a busy machine)", code, 100*late))
			continue
		}
		if c.Said(code) {
			r.problems = append(r.problems, fmt.Sprintf("said %s: %q", code, c.said[code][0]))
		}
	}
	for _, f := range c.figures {
		if !f.ok() {
			r.problems = append(r.problems, fmt.Sprintf("%s: %.3g against %.3g (%.2f×, bound %.2f–%.2f)", f.name, f.got, f.want, f.ratio(), f.lo, f.hi))
		}
	}
	return r
}

// matrix is every scenario, by area.
func matrix() []Scenario {
	return slices.Concat(streamScenarios, streamWordScenarios, rrScenarios, mtuScenarios, commitScenarios, diskScenarios,
		dbScenarios, replScenarios, planScenarios, tuningScenarios, assumedPlanScenarios, backupScenarios, doctorScenarios, dbWordsScenarios, standbyDiskScenarios, cpuScenarios, cpuRRScenarios, wineScenarios, hostScenarios, coreScenarios, doctorHostScenarios, fleetScenarios, fleetNetScenarios, coalescingScenarios, offloadScenarios)
}

// runAll is whether to run the whole matrix rather than its CI subset.
func runAll() bool { return *allFlag || os.Getenv("NARROWS_VERDICTS") == "all" }

// TestVerdicts runs the matrix (its CI subset under go test; all of it
// with -all), one subtest a scenario, and prints the table.
func TestVerdicts(t *testing.T) {
	setUp(t, 0)
	var (
		mu   sync.Mutex
		rows []row
	)
	only := regexp.MustCompile(*onlyFlag)
	// The scenarios run side by side, each on its share of the machine;
	// the group returns when the last has ended.
	t.Run("matrix", func(t *testing.T) {
		for _, s := range matrix() {
			if !s.CI && !runAll() || !only.MatchString(s.Name) {
				continue
			}
			t.Run(s.Name, func(t *testing.T) {
				parallel(t, max(s.Share, 1), normal)
				c := &Case{T: t, said: map[string][]string{}, host: watchHost()}
				t0 := time.Now()
				// The row is made in a defer: a scenario that stops with
				// t.Fatal (a run that exits as it should not) unwinds past
				// anything after s.Run, and must still be a row, failed.
				defer func() {
					c.host.close()
					r := judge(s, c)
					r.took = time.Since(t0)
					if t.Skipped() {
						r.skipped = "skipped"
					}
					if t.Failed() && len(r.problems) == 0 {
						r.problems = append(r.problems, "the scenario did not finish: see its log")
					}
					for _, p := range r.problems {
						t.Errorf("%s: %s", s.Name, p)
					}
					for _, f := range r.figures {
						t.Logf("%s: %.4g against the truth %.4g: %.3f× (bound %.2f–%.2f: %s)", f.name, f.got, f.want, f.ratio(), f.lo, f.hi, f.why)
					}
					mu.Lock()
					rows = append(rows, r)
					mu.Unlock()
					fmt.Println(r.line())
				}()
				s.Run(c)
			})
		}
	})
	// The table keeps the matrix's order, whatever order they ended in.
	order := map[string]int{}
	for i, s := range matrix() {
		order[s.Name] = i
	}
	slices.SortFunc(rows, func(a, b row) int { return order[a.s.Name] - order[b.s.Name] })
	passed, failed := 0, 0
	for _, r := range rows {
		if r.passed() {
			passed++
		} else if r.skipped == "" {
			failed++
		}
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if *writeFlag != "" {
		if err := writeTable(*writeFlag, rows, passed, failed); err != nil {
			t.Error(err)
		}
	}
}

// line is the terminal's row of a scenario.
func (r row) line() string {
	verdict := "pass"
	switch {
	case r.skipped != "":
		verdict = "skip"
	case !r.passed():
		verdict = "FAIL: " + strings.Join(r.problems, "; ")
	}
	if len(r.notes) > 0 {
		verdict += " (" + strings.Join(r.notes, "; ") + ")"
	}
	var figs []string
	for _, f := range r.figures {
		figs = append(figs, fmt.Sprintf("%s %.2f×", f.name, f.ratio()))
	}
	return fmt.Sprintf("%-34s %-6s | %s | truth: %s | said: %s | %s | %s", r.s.Name, r.took.Round(time.Second), r.s.Question, r.s.Truth,
		strings.Join(r.said, " "), strings.Join(figs, "; "), verdict)
}

const (
	beginMark = "<!-- verdicts: begin (make verdicts writes this table) -->"
	endMark   = "<!-- verdicts: end -->"
)

// writeTable replaces the table between the markers in path.
func writeTable(path string, rows []row, passed, failed int) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	before, rest, ok1 := strings.Cut(string(old), beginMark)
	_, after, ok2 := strings.Cut(rest, endMark)
	if !ok1 || !ok2 {
		return fmt.Errorf("%s has no verdicts markers", path)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nRun %s on %s, %d scenarios: **%d passed, %d failed**.\n\n", beginMark, time.Now().UTC().Format("2006-01-02"), hostName(), len(rows), passed, failed)
	b.WriteString("| scenario | question | truth | must say / must not say | narrows said | figure vs truth (bound) | result |\n|---|---|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for _, r := range rows {
		var figs []string
		for _, f := range r.figures {
			figs = append(figs, fmt.Sprintf("%s: %.3g vs %.3g = %.2f× (bound %.2f–%.2f: %s)", f.name, f.got, f.want, f.ratio(), f.lo, f.hi, f.why))
		}
		res := "pass"
		if r.skipped != "" {
			res = "skipped"
		} else if !r.passed() {
			res = "**fail**: " + strings.Join(r.problems, "; ")
		}
		if len(r.notes) > 0 {
			res += " (" + strings.Join(r.notes, "; ") + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s / not %s | %s | %s | %s (%s) |\n", cell(r.s.Name), cell(r.s.Question), cell(r.s.Truth),
			strings.Join(r.s.Say, " "), strings.Join(r.s.NotSay, " "), strings.Join(r.said, " "), cell(strings.Join(figs, "; ")), cell(res), r.took.Round(time.Second))
	}
	b.WriteString("\n" + endMark)
	return os.WriteFile(path, []byte(before+b.String()+after), 0o644)
}

func hostName() string {
	n, _ := os.Hostname()
	return fmt.Sprintf("a %d-core machine (%s)", runtime.NumCPU(), n)
}
