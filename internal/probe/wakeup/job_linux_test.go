//go:build linux

package wakeup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// job is a Job of argv, its program found on PATH.
func job(t *testing.T, argv ...string) Job {
	t.Helper()
	path, err := exec.LookPath(argv[0])
	if err != nil {
		t.Skipf("%s: %v", argv[0], err)
	}
	return Job{Path: path, Args: argv[1:], Name: filepath.Base(argv[0])}
}

// needHold skips where the CPUs cannot be kept awake (one CPU).
func needHold(t *testing.T) {
	t.Helper()
	if _, err := canHold(); err != nil {
		t.Skipf("cannot keep the CPUs awake here: %v", err)
	}
}

// TestJobSleepFree: a job that sleeps 200 ms waits on a timer, not on
// round trips: keeping the CPUs awake changes it by a wake-up's
// microseconds, far inside the floor (a tenth of its time). Each block is
// one whole run of it. On a machine busy with other work it is unjudged,
// saying so, never a cost.
func TestJobSleepFree(t *testing.T) {
	needHold(t)
	res, err := RunJob(context.Background(), Config{Duration: 20 * time.Second, Settle: 50 * time.Millisecond, MinPairs: 3}, job(t, "sleep", "0.2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s ± %s a run; why %q", res.Verdict, 2*res.PerWake.D(), 2*res.PerWakeMargin.D(), res.Why)
	if len(res.Blocks) < 6 || len(res.Blocks)%2 != 0 {
		t.Fatalf("%d blocks, want pairs, three or more", len(res.Blocks))
	}
	for i, b := range res.Blocks {
		if b.Awake != (i%2 == 1) || b.RoundTrips != 1 || b.Mean.D() < 200*time.Millisecond || b.Mean.D() > 5*time.Second {
			t.Errorf("block %d: %+v, want one run of 200 ms or a little more, as is and awake in turn", i, b)
		}
	}
	switch {
	case res.Verdict == result.WakeupFree:
	case res.Verdict == result.WakeupUnjudged && strings.Contains(res.Why, "other work took"):
		t.Logf("a busy machine: %s", res.Why)
	default:
		t.Errorf("verdict %s (%s), want %s: a timer's sleep gains nothing awake", res.Verdict, res.Why, result.WakeupFree)
	}
}

// TestJobFails: a job that fails ends the run with an error that names
// the program, its exit status and its last words, their control
// characters shown, not sent to the terminal.
func TestJobFails(t *testing.T) {
	needHold(t)
	j := job(t, "sh", "-c", `printf 'connecting\nstill connecting\nFATAL: no such database \033[31mreports\nHINT: create it\n\n' >&2; exit 3`)
	_, err := RunJob(context.Background(), Config{Duration: 20 * time.Second, Settle: 10 * time.Millisecond}, j)
	if err == nil {
		t.Fatal("a failing job: no error")
	}
	msg := err.Error()
	for _, want := range []string{"the job (sh) failed", "exit status 3", "no such database", `\x1b[31mreports`, "HINT: create it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q: want %q in it", msg, want)
		}
	}
	if strings.ContainsRune(msg, 0x1b) || strings.Contains(msg, "connecting\n") || strings.Count(msg, "connecting") != 1 {
		t.Errorf("error %q: an escape sent on, or more than the last three lines", msg)
	}
}

// TestJobShortBudget: a job whose fewest pairs cannot fit the budget is
// left unjudged after its first pair, saying what it took and what
// --duration would hold it.
func TestJobShortBudget(t *testing.T) {
	needHold(t)
	start := time.Now()
	res, err := RunJob(context.Background(), Config{Duration: 2 * time.Second, Settle: 100 * time.Millisecond, MinPairs: 4}, job(t, "sleep", "0.5"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != result.WakeupUnjudged || len(res.Blocks) != 2 || !strings.Contains(res.Why, "give --duration") || !strings.Contains(res.Why, "took") {
		t.Errorf("verdict %s after %d blocks, why %q: want unjudged after one pair, saying the --duration that holds it", res.Verdict, len(res.Blocks), res.Why)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s: want it to stop when it knows, within the 2 s budget", took)
	}
}

// TestJobKilledAtTheBudget: a job that runs past the budget is killed
// there, and the run says so.
func TestJobKilledAtTheBudget(t *testing.T) {
	needHold(t)
	start := time.Now()
	res, err := RunJob(context.Background(), Config{Duration: time.Second, Settle: 100 * time.Millisecond}, job(t, "sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s: the job was not killed at the budget's end (1 s)", took)
	}
	if res.Verdict != result.WakeupUnjudged || !strings.Contains(res.Why, "ran past the end of --duration") {
		t.Errorf("verdict %s, why %q: want unjudged, the job run past the budget", res.Verdict, res.Why)
	}
}

// TestJobLeavesNothing: when the run is cancelled (a signal to narrows),
// the job and what it started in the background are killed, in its PID
// namespace and in its process group alone (a host that refuses the
// namespace).
func TestJobLeavesNothing(t *testing.T) {
	needHold(t)
	withAndWithoutNamespace(t, func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		j := job(t, "sh", "-c", "("+writePid(pidFile)+"; exec sleep 30) & sleep 30")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := RunJob(ctx, Config{Duration: time.Minute, Settle: 10 * time.Millisecond}, j)
			done <- err
		}()
		bg := waitPid(t, pidFile)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: %v, want the context's error", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("cancelled, and the run did not end within 5 s")
		}
		if alive(bg, 2*time.Second) {
			t.Errorf("the job's background process %d outlived the run", bg)
			syscall.Kill(bg, syscall.SIGKILL) //nolint:errcheck
		}
	})
}

// TestJobEndsWithItsProcess: a job's run ends when its process ends,
// though a program it left in the background holds its standard error
// (with the pipe os/exec reads, the run waited for it and failed after a
// second); that program is killed then, with or without a namespace.
func TestJobEndsWithItsProcess(t *testing.T) {
	needHold(t)
	withAndWithoutNamespace(t, func(t *testing.T) {
		dir := t.TempDir()
		j := job(t, "sh", "-c", perRun(dir)+"("+writePid(`"$f"`)+"; exec sleep 30) & while [ ! -s \"$f\" ]; do sleep 0.01; done")
		res, err := RunJob(context.Background(), Config{Duration: 5 * time.Second, Settle: 10 * time.Millisecond, MinPairs: 2}, j)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range res.Blocks {
			if b.Mean.D() >= 900*time.Millisecond {
				t.Errorf("block %d: the job took %s, want it ended with its process (a few ms), not waited on its background", i, b.Mean.D())
			}
		}
		noneAlive(t, dir, len(res.Blocks), "the job's background process")
	})
}

// TestJobInItsNamespace: as root, the job is the first process of a PID
// namespace of its own (its pid there is 1), and a job that ends leaves
// nothing behind, a process it started in a session of its own (out of
// its process group) included.
func TestJobInItsNamespace(t *testing.T) {
	needHold(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: the job runs in its process group alone")
	}
	dir := t.TempDir()
	inner, pids := filepath.Join(dir, "inner"), filepath.Join(dir, "pids")
	if err := os.Mkdir(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	j := job(t, "sh", "-c", "echo $$ > "+inner+"; "+perRun(pids)+"setsid sh -c '"+writePid(`"$f"`)+"; exec sleep 30' & "+
		`while [ ! -s "$f" ]; do sleep 0.01; done`)
	res, err := RunJob(context.Background(), Config{Duration: 2 * time.Second, Settle: 10 * time.Millisecond, MinPairs: 1}, j)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(inner); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Errorf("the job's pid in its namespace: %q (%v), want 1", b, err)
	}
	noneAlive(t, pids, len(res.Blocks), "the job's process in a session of its own")
}

// perRun is shell that makes a file of dir's for this run of the job, $f
// (exported, for what it starts): each run's background process writes
// its own, so that none reads a file an earlier run wrote (a run whose
// background process was killed between truncating a shared file and
// writing it left it empty).
func perRun(dir string) string {
	return `f=$(mktemp -p "` + dir + `"); export f; `
}

// noneAlive: every pid written to a file of dir (one a run, runs of
// them) is dead after up to 2 s.
func noneAlive(t *testing.T, dir string, runs int, what string) {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != runs {
		t.Errorf("%d files of pids for %d runs of the job", len(files), runs)
	}
	for _, f := range files {
		bg := waitPid(t, filepath.Join(dir, f.Name()))
		if alive(bg, 2*time.Second) {
			t.Errorf("%s (pid %d) outlived the job's run", what, bg)
			syscall.Kill(bg, syscall.SIGKILL) //nolint:errcheck
		}
	}
}

// TestJobDiesWithNarrows: narrows killed outright (SIGKILL, no cleanup
// of its own) takes its job with it: the kernel's parent-death signal.
// In its PID namespace (root), what the job started in a session of its
// own goes too: the kernel kills a namespace whose first process dies.
func TestJobDiesWithNarrows(t *testing.T) {
	if dir := os.Getenv("NARROWS_JOB_HELPER"); dir != "" {
		// The helper: narrows host running a job that records its pid
		// and its background process's, in a session of its own.
		j := job(t, "sh", "-c", "setsid sh -c '"+writePid(filepath.Join(dir, "bg"))+"; exec sleep 30' & "+
			writePid(filepath.Join(dir, "job"))+"; exec sleep 30")
		RunJob(context.Background(), Config{Duration: time.Minute, Settle: 10 * time.Millisecond}, j) //nolint:errcheck // it is killed
		return
	}
	needHold(t)
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run", "^TestJobDiesWithNarrows$")
	helper.Env = append(os.Environ(), "NARROWS_JOB_HELPER="+dir)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Wait() //nolint:errcheck
	defer helper.Process.Kill()
	job, bg := waitPid(t, filepath.Join(dir, "job")), waitPid(t, filepath.Join(dir, "bg"))
	helper.Process.Signal(syscall.SIGKILL) //nolint:errcheck
	if alive(job, 3*time.Second) {
		t.Errorf("the job (pid %d) outlived narrows killed with SIGKILL", job)
		syscall.Kill(job, syscall.SIGKILL) //nolint:errcheck
	}
	if os.Geteuid() != 0 {
		syscall.Kill(bg, syscall.SIGKILL) //nolint:errcheck
		t.Skip("not root: no PID namespace, and what the job started in a session of its own outlives narrows killed with SIGKILL")
	}
	if alive(bg, 3*time.Second) {
		t.Errorf("the job's process in a session of its own (pid %d) outlived narrows killed with SIGKILL", bg)
		syscall.Kill(bg, syscall.SIGKILL) //nolint:errcheck
	}
}

// writePid is shell that writes the shell's pid as this host sees it to
// file: /proc/self, opened by the shell itself, is this host's /proc (in
// the job's PID namespace $$ is its pid there).
func writePid(file string) string {
	return "read p r < /proc/self/stat; echo $p > " + file
}

// withAndWithoutNamespace runs test as a subtest twice: the job in a PID
// namespace of its own where this host allows, and in its process group
// alone, as a host that refuses the namespace runs it.
func withAndWithoutNamespace(t *testing.T, test func(t *testing.T)) {
	for _, ns := range []bool{true, false} {
		t.Run(fmt.Sprintf("namespace=%v", ns), func(t *testing.T) {
			defer func(was bool) { pidNamespace = was }(pidNamespace)
			pidNamespace = ns
			test(t)
		})
	}
}

// alive says whether pid still runs after up to wait (a zombie, killed
// and not yet reaped, does not).
func alive(pid int, wait time.Duration) bool {
	for end := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
			return false
		}
		if time.Now().After(end) {
			return true
		}
	}
}
