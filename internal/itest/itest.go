// Package itest is the integration-test harness: it builds the narrows
// binary once per test process and runs agents and clients as separate
// processes, the way a DBA runs them. Test code only.
package itest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Secret is the shared secret test agents and clients use.
const Secret = "itest-secret-0123456789abcdef"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of a narrows binary built from this tree: the
// one NARROWS_TEST_BIN names, which make test builds once before any test
// runs, or else one this test process builds.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p, ok := os.LookupEnv(BinEnv); ok {
			binPath, buildErr = prebuilt(BinEnv, p)
			return
		}
		dir, err := os.MkdirTemp("", "narrows-itest-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "narrows")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/narrows")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// BinEnv and ExeEnv name narrows and narrows.exe built from this tree
// ahead of the tests, as they would build them themselves: make test
// builds both once, where its log shows how long they took, instead of
// every test process linking its own (2.5 s each, warm; nine packages
// start narrows) and the Wine tests compiling Windows' under their
// set-up deadline.
const (
	BinEnv = "NARROWS_TEST_BIN"
	ExeEnv = "NARROWS_TEST_EXE"
)

// prebuilt checks that path, given in the environment variable env, is an
// executable file, and returns it absolute.
func prebuilt(env, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %v", env, path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %v", env, path, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s=%s: not an executable file", env, path)
	}
	return abs, nil
}

// Agent is a running `narrows serve` process.
type Agent struct {
	Addr   string // host:port it listens on
	Cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
}

// Log returns what the agent logged so far.
func (a *Agent) Log() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stderr.String()
}

// WaitLog waits for the agent to log what (a test's end, which it logs
// after the client has its result), and fails t if it has not within a
// bound a busy machine keeps.
func (a *Agent) WaitLog(t testing.TB, what string) {
	t.Helper()
	for t0 := time.Now(); !strings.Contains(a.Log(), what); time.Sleep(20 * time.Millisecond) {
		if time.Since(t0) > 20*time.Second {
			t.Fatalf("the agent did not log %s:\n%s", what, a.Log())
		}
	}
}

var listening = regexp.MustCompile(`msg="agent listening" addr=(\S+)`)

// StartAgent starts `narrows serve --listen 127.0.0.1:0` plus args with the
// test secret in its environment, waits until it listens, and stops it at
// the end of the test. wrap, if given, prefixes the command (e.g. `ip
// netns exec NS`).
func StartAgent(t testing.TB, args []string, wrap ...string) *Agent {
	t.Helper()
	full := append(append([]string{}, wrap...), Binary(t), "serve")
	return startAgent(t, append(full, args...), nil)
}

// startAgent starts the agent command full (adding --listen 127.0.0.1:0
// unless it names one) with env added to the test's, and stops it at the
// end of the test.
func startAgent(t testing.TB, full, env []string) *Agent {
	t.Helper()
	if !hasFlag(full, "--listen") {
		full = append(full, "--listen", "127.0.0.1:0")
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = append(append(os.Environ(), "NARROWS_SECRET="+Secret), env...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	a := &Agent{Cmd: cmd}
	if err := StartTied(cmd); err != nil {
		t.Fatalf("start agent: %v", err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			a.mu.Lock()
			a.stderr.WriteString(line + "\n")
			a.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		pw.Close()
	})
	select {
	case a.Addr = <-addr:
	case <-time.After(10 * time.Second):
		t.Fatalf("agent did not start listening; log:\n%s", a.Log())
	}
	return a
}

func hasFlag(args []string, f string) bool {
	for _, a := range args {
		if a == f || strings.HasPrefix(a, f+"=") {
			return true
		}
	}
	return false
}

// Result is a finished narrows command.
type Result struct {
	Stdout, Stderr string
	Code           int
	// Usage is the process's resource use as the kernel counted it
	// (*syscall.Rusage on Unix: its peak RSS, its CPU time).
	Usage any
}

// Run runs narrows with args (and the test secret in NARROWS_SECRET unless
// env overrides it) and waits for it, at most timeout.
func Run(t testing.TB, timeout time.Duration, env []string, args ...string) Result {
	t.Helper()
	return RunWrapped(t, timeout, env, nil, args...)
}

// RunWrapped is Run with a command prefix such as `ip netns exec NS`.
func RunWrapped(t testing.TB, timeout time.Duration, env []string, wrap []string, args ...string) Result {
	t.Helper()
	return run(t, timeout, env, append(append(append([]string{}, wrap...), Binary(t)), args...))
}

// run runs the command full with env added to the test's.
func run(t testing.TB, timeout time.Duration, env []string, full []string) Result {
	t.Helper()
	args := full[1:]
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Env = append(append(os.Environ(), "NARROWS_SECRET="+Secret, CheckInvariants+"=1"), withHistory(env)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// Under Wine the first process of a session hands its output to
	// services.exe, which outlives it: a failure then, not a hang.
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run narrows %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("narrows %v did not finish within %s; stdout:\n%s\nstderr:\n%s", args, timeout, out.String(), errb.String())
	}
	brokenInvariants(t, args, errb.String())
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code, Usage: cmd.ProcessState.SysUsage()}
}

// CheckInvariants, set to 1 for every run, makes narrows hold each report
// it emits to the report invariants (internal/invariants) and say each one
// broken on standard error; run fails the test on such a line. A test whose
// point is data no real run makes (internal/itest/hostile) opts out with
// NoInvariants in its env, and says why.
const (
	CheckInvariants = "NARROWS_CHECK_INVARIANTS"
	NoInvariants    = CheckInvariants + "=0"
	// PathRate gives the checker the path's rate, in bits per second, when
	// the test knows it (its delay line's): PathRate+"=300000000".
	PathRate = "NARROWS_CHECK_PATH_BITS_PER_SECOND"
)

const brokenPrefix = "narrows: invariant broken: "

// Broken is the invariants a run said it broke (CheckInvariants), one
// line each.
func Broken(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if v, ok := strings.CutPrefix(l, brokenPrefix); ok {
			out = append(out, v)
		}
	}
	return out
}

// brokenInvariants fails the test on each invariant a run broke.
func brokenInvariants(t testing.TB, args []string, stderr string) {
	t.Helper()
	for _, v := range Broken(stderr) {
		t.Errorf("narrows %s: %s%s", strings.Join(args, " "), brokenPrefix, v)
	}
}

// Tests keep no history: narrows would write every test's runs into the
// user's data directory. A test that tests the history names its own
// store (NARROWS_HISTORY=DIR in the env it gives Run), which turns
// keeping back on for that run.
func init() {
	if os.Getenv("NARROWS_HISTORY") == "" {
		os.Setenv("NARROWS_NO_HISTORY", "1")
	}
}

// withHistory re-enables the history for a run whose env names a store
// (unless that env turns it off again: its own entries come last, and
// the last of a name wins).
func withHistory(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "NARROWS_HISTORY=") {
			return append([]string{"NARROWS_NO_HISTORY="}, env...)
		}
	}
	return env
}
