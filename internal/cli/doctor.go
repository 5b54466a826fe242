package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/doctor"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
	"github.com/narrows/narrows/internal/words"
)

// doctorFlags are `narrows doctor`'s: where things are; each optional.
type doctorFlags struct {
	to, dsn, dataPath, logPath, backupPath, budget, html, out string
	replicas                                                  multiFlag
	json                                                      bool
	agent                                                     agentFlags
}

func doctorCmd(ctx context.Context, env Env, args []string) error {
	begun := time.Now() // the budget covers the checks before the steps too
	fs := newFlags(env, "doctor")
	var df doctorFlags
	fs.StringVar(&df.to, "to", "", "the agent (narrows serve) on the replica's or the backup's host: HOST or HOST:PORT")
	df.agent.register(fs)
	fs.StringVar(&df.dsn, "dsn", "", "the primary: postgres://…, mysql://… or sqlserver://… (or set NARROWS_DSN)")
	fs.Var(&df.replicas, "replica-dsn", "a replica to read too, [NAME=]DSN (repeatable; MySQL/MariaDB need it)")
	fs.StringVar(&df.dataPath, "data-path", "", "the database's data directory here (its pages: the data profile; read and written by backups)")
	fs.StringVar(&df.logPath, "log-path", "", "the directory of the database's log here (its flushes: the log profile)")
	fs.StringVar(&df.backupPath, "backup-path", "", "a directory on the agent, inside its --disk-path, where backups land")
	fs.StringVar(&df.budget, "budget", "3m", "the run's whole time, from its checks to its report: the steps share it")
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
	in := doctor.Inputs{DataPath: df.dataPath, LogPath: df.logPath, BackupPath: df.backupPath}
	rawDSN := df.dsn
	if rawDSN == "" {
		rawDSN = env.Getenv("NARROWS_DSN")
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
	if df.to == "" && rawDSN == "" && df.dataPath == "" && df.logPath == "" {
		return usagef("doctor: give what to examine: --to HOST (narrows serve on the replica's or the backup's host), --dsn (the primary), --data-path or --log-path")
	}
	if df.backupPath != "" && df.to == "" {
		return usagef("doctor: --backup-path is a directory on the agent: give --to HOST too")
	}
	// The DSNs are read before anything runs: a mistake in one is said
	// now, in one line, not found as failed steps minutes later.
	if rawDSN != "" {
		if in.DSN, err = dsnOf("doctor", "--dsn", rawDSN); err != nil {
			return err
		}
		if in.Replicas, err = replicasOf("doctor", df.replicas, in.DSN); err != nil {
			return err
		}
	} else if len(df.replicas) > 0 {
		return usagef("doctor: --replica-dsn is read beside the primary: give --dsn too")
	}
	target := "this host"
	var software string
	if df.to != "" {
		opts, err := df.agent.options(env, "--to", df.to)
		if err != nil {
			return err
		}
		sess, err := command.Connect(ctx, opts)
		if err != nil {
			return err
		}
		in.Agent, in.To, software = &opts, df.to, sess.Software
		in.AgentDiskPaths, in.AgentMaxDiskSize, in.AgentMaxDuration = sess.Limits.DiskPaths, sess.Limits.MaxDiskSize, sess.Limits.MaxDuration
		sess.Close()
		target = opts.Addr
	}
	// What was given is checked before the first step (the backup path
	// against the agent's, a login to each database): a mistake is one
	// line and exit 2 now, not failed steps minutes later.
	if err := in.Check(ctx, dbTimeout); err != nil {
		return err
	}
	in.Budget = budget
	if floor, longest := doctor.Floor(in); budget < floor {
		return usagef("--budget %s: the steps this run asks take %s at the least (%s the longest): give --budget %s or more (3m measures every step well enough to plan from)",
			df.budget, metric.FlagDuration(floor), longest, metric.FlagDuration(floor))
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
	run := jsonl.New(runFile)

	progress := newProgress(env.Stderr, env.rawStderr, len(doctor.Steps))
	cfg := doctor.Config{Inputs: in, Budget: budget, Start: begun, Target: target, Software: software, RunName: runPath,
		Hooks: doctor.Hooks{
			Start: func(k int, name string, share time.Duration, end time.Time) func() {
				progress.start(k, name, share, time.Until(end))
				return progress.tick(k, name, share, end)
			},
			Skipped: progress.skipped,
			Done:    progress.done,
			// The steps' own records, in order: what a plan reads --from.
			Record: func(rep *result.Report, ivs []result.Interval) error {
				for _, iv := range ivs {
					if err := run.Interval(iv); err != nil {
						return fmt.Errorf("writing %s: %w", runPath, err)
					}
				}
				if err := run.Report(rep); err != nil {
					return fmt.Errorf("writing %s: %w", runPath, err)
				}
				return nil
			},
		}}
	rep, runErr := cfg.Run(ctx, command.Env{Now: env.Now, Tool: tool()})
	progress.finish()
	if rep == nil {
		return runErr
	}
	if err := run.Report(rep); err != nil {
		return fmt.Errorf("writing %s: %w", runPath, err)
	}
	written := []string{runPath}
	if err := writeHTML(htmlPath, rep, nil); err != nil {
		fmt.Fprintf(env.Stderr, "narrows doctor: the report was not written: %v\n", err)
	} else {
		written = append(written, htmlPath)
	}
	// The steps' intervals are in it. Kept with the run file's full path:
	// the history shows which id is which file.
	abs, err := filepath.Abs(runPath)
	if err != nil {
		abs = runPath
	}
	kept := keepRunFrom(env, rep, nil, abs)
	if isTrue(env.Getenv(checkEnv)) {
		reportBroken(env, rep, nil) // the steps' own, each with its intervals
	}
	if df.json {
		if err := jsonl.New(env.Stdout).Report(rep); err != nil {
			return err
		}
	} else {
		printDoctor(env.Stdout, rep, written, kept)
	}
	return runErr
}

// dbTimeout bounds each login doctor checks before its first step.
const dbTimeout = 15 * time.Second

// doctorVerdictsShown is how many verdicts the terminal shows before
// pointing at the report.
const doctorVerdictsShown = 8

// printDoctor writes the verdicts first, then each step in a line, then
// where to read more.
func printDoctor(w io.Writer, rep *result.Report, written []string, kept int64) {
	d := rep.Doctor
	fmt.Fprintf(w, "narrows doctor → %s: %s in %s of a %s budget\n", rep.Target, stepTally(d),
		d.Elapsed.D().Round(time.Second), d.Budget.D())
	if path := words.PathSummary(rep); path != "" {
		fmt.Fprintf(w, "The path: %s\n", path)
	}
	fmt.Fprintln(w)
	// The questions a DBA came with first, each answered by a verdict or
	// by why there is none; then the other verdicts.
	answered := map[*result.Finding]bool{}
	fmt.Fprintln(w, "The answers:")
	for i, a := range words.Answers(rep) {
		fmt.Fprintf(w, "%d. %s\n", i+1, a.Question)
		if a.Finding == nil {
			fmt.Fprintf(w, "   - %s\n", a.Else)
			continue
		}
		answered[a.Finding] = true
		fmt.Fprintf(w, "   %s %s\n", mark(a.Finding.Severity), words.Said(*a.Finding))
	}
	var rest []result.Finding
	for i := range d.Verdicts {
		if !answered[&d.Verdicts[i]] {
			rest = append(rest, d.Verdicts[i])
		}
	}
	if len(rest) > 0 {
		fmt.Fprintln(w, "\nAlso, most severe first:")
	}
	for i, f := range rest {
		if i == doctorVerdictsShown {
			fmt.Fprintf(w, "  … and %d more in the report\n", len(rest)-i)
			break
		}
		fmt.Fprintf(w, "  %s %s\n", mark(f.Severity), words.Said(f))
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
	if kept > 0 {
		fmt.Fprintf(w, "Kept in the history as run %d: after a change, doctor again, then narrows compare %d LATER\n", kept, kept)
	}
}

// stepTally says how many of the steps ran: "12 of 16 steps ran (1
// failed, 3 skipped)"; the steps an interrupt or the budget stopped
// before they started are skipped, not counted as run.
func stepTally(d *result.Doctor) string {
	ran, failed, skipped := d.Tally()
	s := fmt.Sprintf("%d of %d steps ran", ran+failed, len(d.Steps))
	var parts []string
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", failed))
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", skipped))
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// mark is a verdict's sign in the terminal, by its severity: ! a
// warning, • the rest.
func mark(severity string) string {
	if severity == "warning" {
		return "!"
	}
	return "•"
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
