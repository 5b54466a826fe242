package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/doctor"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
)

// doctorFlags are `narrows doctor`'s: where things are; each optional.
type doctorFlags struct {
	to, dsn, dataPath, logPath, backupPath, budget, html, out string
	replicas                                                  multiFlag
	json                                                      bool
	agent                                                     agentFlags
}

func doctorCmd(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "doctor")
	var df doctorFlags
	fs.StringVar(&df.to, "to", "", "the agent (narrows serve) on the replica's or the backup's host: HOST or HOST:PORT")
	df.agent.register(fs)
	fs.StringVar(&df.dsn, "dsn", "", "the primary: postgres://…, mysql://… or sqlserver://… (or set NARROWS_DSN)")
	fs.Var(&df.replicas, "replica-dsn", "a replica to read too, [NAME=]DSN (repeatable; MySQL/MariaDB need it)")
	fs.StringVar(&df.dataPath, "data-path", "", "the database's data directory here (its pages: the data profile; read and written by backups)")
	fs.StringVar(&df.logPath, "log-path", "", "the directory of the database's log here (its flushes: the log profile)")
	fs.StringVar(&df.backupPath, "backup-path", "", "a directory on the agent, inside its --disk-path, where backups land")
	fs.StringVar(&df.budget, "budget", "3m", "the time every step shares")
	fs.StringVar(&df.out, "out", "", "the run's JSON lines go to this file (default narrows-doctor-DATE-TIME.jsonl here)")
	fs.StringVar(&df.html, "html", "", "the report goes to this file (default: beside the run, .html)")
	fs.BoolVar(&df.json, "json", false, "write the doctor's summary as a JSON line on standard output instead of the verdicts")
	if err := parse(fs, args); err != nil {
		return err
	}
	budget, err := positiveDuration("--budget", df.budget)
	if err != nil {
		return err
	}
	if budget < 10*time.Second || budget > 24*time.Hour {
		return usagef("--budget %s: use 10s to 24h (3m measures every step well enough to plan from)", df.budget)
	}
	in := doctor.Inputs{DSN: df.dsn, ReplicaDSNs: df.replicas, DataPath: df.dataPath, LogPath: df.logPath, BackupPath: df.backupPath}
	if in.DSN == "" {
		in.DSN = env.Getenv("NARROWS_DSN")
	}
	for _, p := range []struct{ flag, dir string }{{"--data-path", df.dataPath}, {"--log-path", df.logPath}} {
		if p.dir == "" {
			continue
		}
		// Both are written (the disk steps' test files): a directory this
		// user may not enter or write is said so here, in one line, not
		// called "not a directory".
		if err := probe.CheckDir(p.flag, p.dir, true); err != nil {
			return err
		}
	}
	if df.to == "" && in.DSN == "" && df.dataPath == "" && df.logPath == "" {
		return usagef("doctor: give what to examine: --to HOST (narrows serve on the replica's or the backup's host), --dsn (the primary), --data-path or --log-path")
	}
	if df.backupPath != "" && df.to == "" {
		return usagef("doctor: --backup-path is a directory on the agent: give --to HOST too")
	}
	target := "this host"
	var software string
	if df.to != "" {
		opts, err := df.agent.options(env, "--to", df.to)
		if err != nil {
			return err
		}
		sess, err := connect(ctx, opts)
		if err != nil {
			return err
		}
		in.Agent, in.AgentDisk, software = true, len(sess.Limits.DiskPaths) > 0, sess.Software
		sess.Close()
		target = opts.Addr
	}
	stamp := env.Now().Format("20060102-150405")
	runPath := df.out
	if runPath == "" {
		runPath = "narrows-doctor-" + stamp + ".jsonl"
	}
	htmlPath := df.html
	if htmlPath == "" {
		htmlPath = strings.TrimSuffix(runPath, ".jsonl") + ".html"
	}
	// O_EXCL: a run never overwrites another's file. 0666: the user's
	// umask says who else may read it, as for the HTML report beside it.
	runFile, err := os.OpenFile(runPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return usagef("--out %s: %v: name another file (doctor never overwrites a run)", runPath, unwrapPath(err))
	}
	defer runFile.Close()

	d := &result.Doctor{Budget: result.Seconds(budget), Steps: []result.DoctorStep{}}
	start := time.Now()
	// The budget holds whatever the far side does: past it and a grace,
	// the step running is stopped and the rest are skipped. Each test on
	// the agent has bounds of its own (client.Bounds); this bounds the sum.
	over := overBudget(budget)
	stepsCtx, stopSteps := context.WithDeadlineCause(ctx, start.Add(budget+over),
		fmt.Errorf("doctor's budget of %s ran out (and %s of grace)", budget, over))
	defer stopSteps()
	misbehaved := "" // why the agent is asked nothing more
	names := doctor.Names()
	// The budget is shared among the steps that apply.
	weightsLeft, fixedLeft := 0.0, time.Duration(0)
	for _, n := range names {
		if _, skip := doctor.Registry[n].Args(in, time.Second); skip == "" {
			weightsLeft += doctor.Registry[n].Weight
			fixedLeft += doctor.Registry[n].Fixed
		}
	}
	progress := newProgress(env.Stderr, env.rawStderr, len(names))
	for k, name := range names {
		st := doctor.Registry[name]
		step := result.DoctorStep{Name: name, Area: st.Area}
		if _, skip := st.Args(in, time.Second); skip != "" {
			step.Status, step.Why = result.StepSkipped, skip
			d.Steps = append(d.Steps, step)
			progress.skipped(k, name, skip)
			continue
		}
		left := budget - time.Since(start)
		share := doctor.Share(left, fixedLeft, st.Weight, weightsLeft)
		weightsLeft -= st.Weight
		fixedLeft -= st.Fixed
		step.Budget = result.Seconds(share)
		if ctx.Err() != nil {
			step.Status, step.Why = result.StepSkipped, "interrupted"
			d.Steps = append(d.Steps, step)
			continue
		}
		if stepsCtx.Err() != nil {
			step.Status, step.Why = result.StepSkipped, context.Cause(stepsCtx).Error()
			d.Steps = append(d.Steps, step)
			progress.skipped(k, name, step.Why)
			continue
		}
		if st.Agent != "" && misbehaved != "" {
			step.Status, step.Why = result.StepSkipped, misbehaved
			d.Steps = append(d.Steps, step)
			progress.skipped(k, name, step.Why)
			continue
		}
		stepArgs, skip := st.Args(in, max(share, time.Second))
		if skip != "" {
			step.Status, step.Why = result.StepSkipped, skip
			d.Steps = append(d.Steps, step)
			progress.skipped(k, name, skip)
			continue
		}
		full := append(strings.Fields(st.Command), stepArgs...)
		if st.Agent != "" && in.Agent {
			full = append(full, st.Agent, df.to)
			full = append(full, df.agent.flags()...)
		}
		if st.FromRun {
			full = append(full, "--from", runPath)
		}
		full = append(full, "--json")
		progress.start(k, name, share, budget-time.Since(start))
		stopTick := progress.tick(k, name, share, start.Add(budget))
		t0 := time.Now()
		out, stderr, code, err := runStep(stepsCtx, env, full)
		stopTick()
		step.Elapsed = result.Seconds(time.Since(t0))
		ivs, sum := parseRun(name, out)
		step.Intervals, step.Report = ivs, sum
		switch {
		case code == ExitOK && sum != nil && !sum.Partial:
			step.Status = result.StepRan
		default:
			step.Status = result.StepFailed
			step.Why = lastLine(stderr)
			if step.Why == "" && sum != nil {
				step.Why = sum.Error
			}
			if stepsCtx.Err() != nil && ctx.Err() == nil {
				step.Why = "stopped: " + context.Cause(stepsCtx).Error()
			}
		}
		if errors.Is(err, client.ErrMisbehaved) {
			misbehaved = fmt.Sprintf("the agent misbehaved in step %d (%s): it is asked nothing more", k+1, name)
		}
		// The steps' own records, in order: what a plan reads --from.
		runFile.Write(out)
		d.Steps = append(d.Steps, step)
		progress.done(k, name, step)
	}
	progress.finish()
	d.Elapsed = result.Seconds(time.Since(start))
	d.Verdicts = verdicts(d.Steps)
	rep := result.NewReport("doctor", target, tool(), env.Now())
	rep.Agent = software
	rep.Doctor = d
	rep.Findings = d.Verdicts
	// Both ends' facts, as the first step that reached the agent read them
	// (this host's then routed to it); else this host's, as any step read them.
	for _, s := range d.Steps {
		if s.Report == nil {
			continue
		}
		if s.Report.AgentFacts != nil {
			rep.Facts, rep.AgentFacts = s.Report.Facts, s.Report.AgentFacts
			break
		}
		if rep.Facts == nil {
			rep.Facts = s.Report.Facts
		}
	}
	if ctx.Err() != nil {
		rep.Partial, rep.Error = true, "interrupted"
	}
	if err := jsonl.New(runFile).Report(rep); err != nil {
		return fmt.Errorf("writing %s: %w", runPath, err)
	}
	written := []string{runPath}
	if err := writeHTML(htmlPath, rep, nil); err != nil {
		fmt.Fprintf(env.Stderr, "narrows doctor: the report was not written: %v\n", err)
	} else {
		written = append(written, htmlPath)
	}
	keepRun(env, rep, nil) // the steps' intervals are in it
	if isTrue(env.Getenv(checkEnv)) {
		reportBroken(env, rep, nil) // the steps' own, each with its intervals
	}
	if df.json {
		if err := jsonl.New(env.Stdout).Report(rep); err != nil {
			return err
		}
	} else {
		printDoctor(env.Stdout, rep, written)
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

// flags gives the agent flags back as given, for a step's command line.
func (a *agentFlags) flags() []string {
	var f []string
	if a.secretFile != "" {
		f = append(f, "--secret-file", a.secretFile)
	}
	if a.insecure {
		f = append(f, "--insecure")
	}
	if a.timeout != "" {
		f = append(f, "--timeout", a.timeout)
	}
	return f
}

// runStep runs one narrows command in this process, as its own command
// would run, its output kept; a run's history is the doctor's, not each
// step's.
func runStep(ctx context.Context, env Env, args []string) (stdout []byte, stderr string, code int, err error) {
	var out, errb bytes.Buffer
	sub := env
	sub.Stdout, sub.Stderr = &out, &errb
	get := env.Getenv
	sub.Getenv = func(k string) string {
		switch k {
		case "NARROWS_NO_HISTORY":
			return "1"
		case checkEnv:
			// The doctor checks its report, steps and all: a step's
			// stderr is its failure's reason, not the place to say it.
			return ""
		}
		return get(k)
	}
	code, err = run(ctx, sub, args)
	return out.Bytes(), errb.String(), code, err
}

// overBudget is how far past its budget doctor lets a step run before it
// stops it: steps end near their shares on their own (each sets its
// duration from it), so this is only ever used against a far side that
// does not end its tests.
func overBudget(budget time.Duration) time.Duration { return max(30*time.Second, budget/4) }

// parseRun reads a step's JSON lines: its interval records and its
// summary (the last run in them; nil if it wrote none).
func parseRun(name string, b []byte) ([]result.Interval, *result.Report) {
	var ivs []result.Interval
	var sum *result.Report
	jsonl.Read(bytes.NewReader(b), name, func(rep *result.Report, iv []result.Interval) { sum, ivs = rep, iv })
	return ivs, sum
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "narrows: ")
}

// verdicts are every step's findings that matter, most severe first (in
// the steps' order within a severity), each once.
func verdicts(steps []result.DoctorStep) []result.Finding {
	var out, all []result.Finding
	for _, s := range steps {
		if s.Report != nil {
			all = append(all, s.Report.Findings...)
		}
	}
	withdrawn := advisor.Withdrawn(all)
	seen := map[string]bool{}
	for _, sev := range []string{"warning", "info"} {
		for _, s := range steps {
			if s.Report == nil {
				continue
			}
			for _, f := range s.Report.Findings {
				if f.Severity != sev || seen[f.Summary] || withdrawn[f.Code] {
					continue
				}
				seen[f.Summary] = true
				out = append(out, f)
			}
		}
	}
	if out == nil {
		out = []result.Finding{}
	}
	return out
}

// doctorVerdictsShown is how many verdicts the terminal shows before
// pointing at the report.
const doctorVerdictsShown = 8

// printDoctor writes the verdicts first, then each step in a line, then
// where to read more.
func printDoctor(w io.Writer, rep *result.Report, written []string) {
	d := rep.Doctor
	fmt.Fprintf(w, "narrows doctor → %s: %d steps in %s of a %s budget\n\n", rep.Target, len(d.Steps),
		d.Elapsed.D().Round(time.Second), d.Budget.D())
	if len(d.Verdicts) == 0 {
		fmt.Fprintln(w, "No verdict: nothing ran that could give one.")
	} else {
		fmt.Fprintln(w, "What matters, most severe first:")
	}
	for i, f := range d.Verdicts {
		if i == doctorVerdictsShown {
			fmt.Fprintf(w, "  … and %d more in the report\n", len(d.Verdicts)-i)
			break
		}
		mark := "•"
		if f.Severity == "warning" {
			mark = "!"
		}
		fmt.Fprintf(w, "  %s %s\n", mark, f.Summary)
	}
	fmt.Fprintln(w, "\nSteps:")
	for _, s := range d.Steps {
		switch s.Status {
		case result.StepRan:
			fmt.Fprintf(w, "  %-20s ran, %s\n", s.Name, s.Elapsed.D().Round(100*time.Millisecond))
		default:
			fmt.Fprintf(w, "  %-20s %s: %s\n", s.Name, s.Status, s.Why)
		}
	}
	fmt.Fprintf(w, "\nThe run: %s\n", strings.Join(written, ", "))
}

// progress shows which step runs: on a terminal one line rewritten in
// place, otherwise a plain line a step.
type progress struct {
	w     io.Writer // standard error, escaping (Main's)
	raw   io.Writer // the terminal itself, for the \r that redraws the line
	n     int
	tty   bool
	width int
}

// newProgress writes to w; on a terminal it redraws its line through raw,
// the same stream without the escaping that would show its \r as text.
func newProgress(w, raw io.Writer, n int) *progress {
	p := &progress{w: w, raw: raw, n: n}
	if f, ok := raw.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) line(s string) {
	if p.tty {
		// raw is past Main's escaping, so the line is escaped here: its
		// words are ours, but what is drawn on the terminal goes through
		// the sanitiser, all of it.
		s = untrusted.Text(s)
		pad := max(0, p.width-len(s))
		fmt.Fprintf(p.raw, "\r%s%s", s, strings.Repeat(" ", pad))
		p.width = len(s)
		return
	}
	fmt.Fprintln(p.w, s)
}

func (p *progress) start(k int, name string, share, left time.Duration) {
	given := "reads the run"
	if share > 0 {
		given = share.Round(100 * time.Millisecond).String()
	}
	p.line(fmt.Sprintf("narrows doctor: step %d of %d: %s (%s; %s of the budget left)", k+1, p.n, name, given, max(0, left).Round(time.Second)))
}

// tick rewrites the line every second on a terminal while a step runs:
// what runs, and the time left of the budget. The function it returns
// stops it.
func (p *progress) tick(k int, name string, share time.Duration, end time.Time) (stop func()) {
	if !p.tty {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				p.start(k, name, share, time.Until(end))
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

func (p *progress) skipped(k int, name, why string) {
	if !p.tty {
		p.line(fmt.Sprintf("narrows doctor: step %d of %d: %s skipped: %s", k+1, p.n, name, why))
	}
}

func (p *progress) done(k int, name string, s result.DoctorStep) {
	if s.Status == result.StepFailed {
		if p.tty {
			fmt.Fprintln(p.w)
			p.width = 0
		}
		fmt.Fprintf(p.w, "narrows doctor: %s failed: %s\n", name, s.Why)
	}
}

func (p *progress) finish() {
	if p.tty && p.width > 0 {
		fmt.Fprintf(p.raw, "\r%s\r", strings.Repeat(" ", p.width))
	}
}
