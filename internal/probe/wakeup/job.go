package wakeup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/untrusted"
)

// Job is the operator's own job (`narrows host -- COMMAND`): a program
// that does a fixed amount of work (pgbench -t, a report's script), run
// whole in each block, with this host's CPUs as they are and kept awake.
// Its time is what the wake-ups cost that job, its client's and its
// server's work after each included, where the pair's figure is the
// wake-ups' own cost with the least work after each.
type Job struct {
	// Path is the program, as exec.LookPath found it; Args its arguments
	// (argv[1:]). Neither is ever printed: a command line may carry a
	// password.
	Path string
	Args []string
	// Name is what the result calls it: the program's base name.
	Name string
}

// RunJob runs the experiment on the operator's job: each block as is is
// Settle with this host idle, then the job once; each block awake the CPUs
// kept awake, a moment, then the job once. A block's one "round trip" is
// the whole job (PerWake is half its difference, as a query's is). The
// job's output is thrown away, the tail of its standard error kept for
// when it fails; it is killed (all its processes, where the OS allows)
// when the run ends, whatever ends it.
func RunJob(ctx context.Context, cfg Config, j Job) (*result.Wakeup, error) {
	cfg = cfg.withDefaults()
	return runOn(ctx, cfg, func(end time.Time) (blocker, error) {
		return &jobs{j: j, cfg: cfg, end: end, plain: !pidNamespace}, nil
	})
}

// pidNamespace: give the job a PID namespace of its own where this host
// allows (Linux: group). The tests turn it off to hold the process group
// alone, as a host that refuses one runs it.
var pidNamespace = true

// jobs runs the job in blocks, each run killed at the budget's end.
type jobs struct {
	j   Job
	cfg Config
	end time.Time
	// asis and awake are the job's last time each way.
	asis, awake time.Duration
	// plain: this host refused the job a PID namespace of its own (Linux:
	// group), so every run goes without one, each way the same.
	plain bool
}

// shortBudget: the job does not fit the budget's fewest pairs.
type shortBudget struct{ msg string }

func (e *shortBudget) Error() string { return e.msg }

func (r *jobs) pairTime(cfg Config) time.Duration {
	return cfg.Settle + awakeSettle + r.asis + r.awake
}

// fits: the pairs left, at the last pair's pace, end before the budget.
func (r *jobs) fits(cfg Config, left int) error {
	if time.Now().Add(time.Duration(left) * r.pairTime(cfg)).After(r.end) {
		return r.short(time.Until(r.end) < 0)
	}
	return nil
}

func (r *jobs) block(ctx context.Context, awake bool, settle, _ time.Duration) (result.WakeupBlock, error) {
	if awake {
		release, err := hold()
		if err != nil {
			return result.WakeupBlock{}, err
		}
		defer release()
	}
	// Other work is read while this host idles before the job: the job's
	// own processes, and a server it talks to on this host, are its work.
	others := sysinfo.OthersSince()
	t := time.NewTimer(settle)
	select {
	case <-ctx.Done():
		t.Stop()
		return result.WakeupBlock{}, ctx.Err()
	case <-t.C:
	}
	b := result.WakeupBlock{Awake: awake}
	if share, ok := others(); ok {
		b.Others = &share
	}
	took, err := r.run(ctx)
	if err != nil {
		return b, err
	}
	b.RoundTrips, b.Mean = 1, result.Seconds(took)
	if awake {
		r.awake = took
	} else {
		r.asis = took
	}
	return b, nil
}

// short says the budget is too short for the job, and what would do.
func (r *jobs) short(killed bool) error {
	need := metric.FlagDuration((time.Duration(r.cfg.MinPairs)*r.pairTime(r.cfg) + time.Second).Round(time.Second))
	if killed || r.asis == 0 {
		return &shortBudget{fmt.Sprintf("the job (%s) ran past the end of --duration (%s) before it finished: "+
			"give a --duration that holds %d runs of it each way, with %s before each run as is, or a shorter job",
			r.j.Name, metric.FlagDuration(r.cfg.Duration), r.cfg.MinPairs, metric.FlagDuration(r.cfg.Settle))}
	}
	return &shortBudget{fmt.Sprintf("the job (%s) took %s as is and %s with the CPUs kept awake: %d pairs of runs need %s, more than --duration %s: "+
		"give --duration %s or more, or a shorter job",
		r.j.Name, metric.FormatDuration(r.asis), metric.FormatDuration(r.awake), r.cfg.MinPairs, need,
		metric.FlagDuration(r.cfg.Duration), need)}
}

// run runs the job once and says how long it took: from its start to its
// end, the process's start included (the same each way). Its standard
// error is a pipe of the run's own, read to its tail, so that its time
// ends when its process ends: a program it left in the background,
// holding the pipe, is killed then (contain), not waited for.
func (r *jobs) run(ctx context.Context) (time.Duration, error) {
	jctx, cancel := context.WithDeadline(ctx, r.end)
	defer cancel()
	stderr := &tail{max: tailBytes}
	rd, wr, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("a pipe for the job's standard error: %w", err)
	}
	read := make(chan struct{})
	go func() {
		io.Copy(stderr, rd) //nolint:errcheck // its end: the job's processes gone, or rd closed
		close(read)
	}()
	// drained waits up to a second for the reader to reach the pipe's
	// end (what writes to it is killed by then).
	drained := func() {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-read:
		case <-t.C:
		}
	}
	defer func() {
		drained()
		rd.Close() //nolint:errcheck // read only: the reader ends
		<-read
	}()
	start := func() (*exec.Cmd, time.Time, error) {
		cmd := exec.CommandContext(jctx, r.j.Path, r.j.Args...)
		cmd.Stderr = wr // stdin and stdout: the null device
		cmd.WaitDelay = time.Second
		group(cmd, !r.plain)
		t0 := time.Now()
		return cmd, t0, cmd.Start()
	}
	// The thread that starts the job stays this goroutine's until it
	// ends: Linux's parent-death signal follows the thread, not the
	// process (a spinner that takes a thread over and ends would end it).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd, t0, err := start()
	if err != nil && !r.plain && nsRefused(err) {
		r.plain = true
		cmd, t0, err = start()
	}
	wr.Close() //nolint:errcheck // the job holds its own
	if err != nil {
		return 0, fmt.Errorf("starting the job (%s): %w: check that this user may run it, as it is given after --", r.j.Name, err)
	}
	release, err := contain(cmd)
	if err != nil {
		cmd.Wait() //nolint:errcheck // killed: contain's error says why
		return 0, fmt.Errorf("starting the job (%s): %w", r.j.Name, err)
	}
	err = cmd.Wait()
	took := time.Since(t0)
	release()
	switch {
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case jctx.Err() != nil:
		return 0, r.short(true)
	case err != nil:
		what := err.Error()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			what = exit.ProcessState.String() // "exit status 1", "signal: killed"
		}
		drained() // its last words, all of them
		out := ""
		if last := stderr.last(); last != "" {
			out = ", its last words: " + untrusted.Quote(last)
		}
		return 0, fmt.Errorf("the job (%s) failed after %s (%s)%s: run it alone to see why; narrows host runs it again and again, so it must succeed each time",
			r.j.Name, metric.FormatDuration(took), what, out)
	}
	return took, nil
}

func (r *jobs) close() {}

func (r *jobs) unit() (string, string) {
	return "a run of the job", "while this host idled before the job's runs"
}

// tailBytes is how much of the job's standard error is kept: its end,
// where a failing program says why.
const tailBytes = 4096

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	t.b = append(t.b, p...)
	return n, nil
}

// last is the last lines written that say something (up to three, as a
// program's error and its hint), joined by " | ", at most 300
// characters of their end.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(string(t.b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines[max(0, len(lines)-3):], " | ")
	if r := []rune(s); len(r) > 300 {
		s = "…" + string(r[len(r)-300:])
	}
	return s
}
