//go:build linux

package wakeup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
// the job and what it started in the background are killed.
func TestJobLeavesNothing(t *testing.T) {
	needHold(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	j := job(t, "sh", "-c", "sleep 30 & echo $! > "+pidFile+"; sleep 30")
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
	}
}

// TestJobDiesWithNarrows: narrows killed outright (SIGKILL, no cleanup
// of its own) takes its job with it: the kernel's parent-death signal.
func TestJobDiesWithNarrows(t *testing.T) {
	if pidFile := os.Getenv("NARROWS_JOB_HELPER"); pidFile != "" {
		// The helper: narrows host running a job that records its pid.
		j := job(t, "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 30")
		RunJob(context.Background(), Config{Duration: time.Minute, Settle: 10 * time.Millisecond}, j) //nolint:errcheck // it is killed
		return
	}
	needHold(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	helper := exec.Command(os.Args[0], "-test.run", "^TestJobDiesWithNarrows$")
	helper.Env = append(os.Environ(), "NARROWS_JOB_HELPER="+pidFile)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Wait() //nolint:errcheck
	defer helper.Process.Kill()
	job := waitPid(t, pidFile)
	helper.Process.Signal(syscall.SIGKILL) //nolint:errcheck
	if alive(job, 3*time.Second) {
		t.Errorf("the job (pid %d) outlived narrows killed with SIGKILL", job)
		syscall.Kill(job, syscall.SIGKILL) //nolint:errcheck
	}
}

// waitPid waits up to 10 s for a pid written to file.
func waitPid(t *testing.T, file string) int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid > 0 {
			return pid
		}
	}
	t.Fatal("the job did not start within 10 s")
	return 0
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
