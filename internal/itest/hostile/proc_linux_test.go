//go:build linux

package hostile_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/narrows/narrows/internal/itest"
)

// A run of the real binary, watched from outside: how long it took, how
// much memory it held at its peak (the kernel's account, not the
// runtime's), what it wrote, and how it ended. A run that outlives its
// hard limit, or holds more than killRSS, is killed there, so that a
// client that hangs or balloons fails the test instead of the machine.

// killRSS is where the watchdog kills a run: far past any bound a test
// asserts, low enough that a balloon cannot hurt a shared machine.
const killRSS = 1 << 30

// keep is how much of each stream a run keeps to look at (it counts all).
const keep = 4 << 20

type run struct {
	args  []string
	dir   string        // working directory (the doctor writes its files there)
	limit time.Duration // the hard outer limit: killed there
	// signals are sent in turn, the first after, the next gap apart,
	// counting from when ready is closed (the agent saw its test start).
	signals []syscall.Signal
	after   time.Duration
	gap     time.Duration
	ready   <-chan struct{}
	// check holds the run's reports to the invariants (itest.CheckInvariants):
	// the runs against the real agent only. Against a hostile agent the
	// forged figures are the point (a 40 Gbit/s reading, a NaN, a verdict
	// from nothing): what is tested is that narrows survives them and
	// prints them safely, not that a report made of them holds together.
	check bool
}

type outcome struct {
	args           []string
	code           int           // exit code; -1: killed by the harness or a signal
	killed         string        // why the harness killed it
	took           time.Duration // start to exit
	afterSignal    time.Duration // first signal to exit
	rss            int64         // peak resident bytes
	stdout, stderr capture
}

func (o *outcome) String() string {
	signal := ""
	if o.afterSignal > 0 {
		signal = fmt.Sprintf(" (%s after the first signal)", o.afterSignal.Round(10*time.Millisecond))
	}
	return fmt.Sprintf("exit %d%s after %s%s, peak RSS %s, stdout %d bytes, stderr %d bytes, %d control characters; stderr ends %q",
		o.code, ifNot(o.killed, " (killed: "+o.killed+")"), o.took.Round(10*time.Millisecond), signal,
		mib(o.rss), o.stdout.n, o.stderr.n, o.stdout.controls()+o.stderr.controls(), tail(o.stderr.String(), 300))
}

func ifNot(s, t string) string {
	if s == "" {
		return ""
	}
	return t
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// capture counts every byte written and keeps the first keep of them.
type capture struct {
	mu  sync.Mutex
	n   int64
	buf bytes.Buffer
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	if room := keep - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// lines are the non-empty lines kept.
func (c *capture) lines() []string {
	var l []string
	for _, s := range strings.Split(c.String(), "\n") {
		if s != "" {
			l = append(l, s)
		}
	}
	return l
}

// controls counts what must never reach a terminal in what was kept: a
// byte below 0x20 but newline and tab, DEL, a C1 control (U+0080 to
// U+009F, which some terminals obey as escapes) and the bidirectional
// overrides and isolates (U+202A to U+202E, U+2066 to U+2069), which
// make text read other than it is.
func (c *capture) controls() int {
	return controls(c.String())
}

func controls(s string) int {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			n++
		case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
			n++
		}
	}
	return n
}

// The peak resident size is the kernel's own account, the Maxrss of the
// process's rusage. A process spawned by this one cannot be measured so:
// Go starts it with vfork, and the kernel, at its exec, takes the
// high-water mark of the memory it leaves, which is this test's, as the
// new process's starting peak. So each run goes through a launcher (this
// binary again, see TestMain), small and fresh, that starts narrows, waits
// for it and writes its pid and then its Maxrss to file descriptor 3.
const launchEnv = "NARROWS_HOSTILE_LAUNCH"

func TestMain(m *testing.M) {
	if os.Getenv(launchEnv) != "" {
		os.Exit(launch(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// launch runs args with this process's standard streams and exits as it
// does; signals go to it directly (the harness knows its pid).
func launch(args []string) int {
	report := os.NewFile(3, "report")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, launchEnv+"=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 127
	}
	fmt.Fprintf(report, "%d\n", cmd.Process.Pid)
	cmd.Wait()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		fmt.Fprintf(report, "%d\n", ru.Maxrss)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// start runs the narrows binary bin as r says, at once; the function it
// returns waits for its outcome.
func start(bin string, r run) func() *outcome {
	o := &outcome{args: r.args}
	failed := func(err error) func() *outcome {
		o.code, o.killed = -1, "did not start: "+err.Error()
		return func() *outcome { return o }
	}
	self, err := os.Executable()
	if err != nil {
		return failed(err)
	}
	cmd := exec.Command(self, append([]string{bin}, r.args...)...)
	cmd.Dir = r.dir
	invariants := itest.NoInvariants
	if r.check {
		invariants = itest.CheckInvariants + "=1"
	}
	cmd.Env = append(os.Environ(), launchEnv+"=1", "NARROWS_SECRET="+itest.Secret, "NARROWS_NO_HISTORY=1", invariants)
	cmd.Stdout, cmd.Stderr = &o.stdout, &o.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the launcher and narrows: killed together
	cmd.WaitDelay = 5 * time.Second
	pr, pw, err := os.Pipe()
	if err != nil {
		return failed(err)
	}
	cmd.ExtraFiles = []*os.File{pw}
	t0 := time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return failed(err)
	}
	report := bufio.NewReader(pr)
	pid := cmd.Process.Pid // the launcher's, until narrows' is known
	if _, err := fmt.Fscan(report, &pid); err != nil {
		pid = cmd.Process.Pid
	}
	exited := make(chan struct{})
	var mu sync.Mutex
	var signalled time.Time
	kill := func(why string) {
		mu.Lock()
		defer mu.Unlock()
		if o.killed == "" {
			o.killed = why
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	// The signals.
	go func() {
		if len(r.signals) == 0 {
			return
		}
		select {
		case <-r.ready:
		case <-exited:
			return
		}
		wait := r.after
		for _, s := range r.signals {
			select {
			case <-time.After(wait):
			case <-exited:
				return
			}
			mu.Lock()
			if signalled.IsZero() {
				signalled = time.Now()
			}
			mu.Unlock()
			syscall.Kill(pid, s)
			wait = r.gap
		}
	}()
	var hwm int64 // the peak seen from outside, for a run killed before it could say
	// The watchdog: the hard limit and the memory.
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(r.limit)
		for {
			select {
			case <-exited:
				return
			case <-deadline:
				kill(fmt.Sprintf("still running at the hard limit of %s", r.limit))
				return
			case <-tick.C:
				now, peak := rss(pid)
				mu.Lock()
				hwm = max(hwm, peak)
				mu.Unlock()
				if now > killRSS {
					kill(fmt.Sprintf("%s resident, past the watchdog's %s", mib(now), mib(killRSS)))
					return
				}
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var maxrss int64
		fmt.Fscan(report, &maxrss)
		pr.Close()
		cmd.Wait()
		o.took = time.Since(t0)
		close(exited)
		o.code = cmd.ProcessState.ExitCode()
		mu.Lock()
		defer mu.Unlock()
		o.rss = max(maxrss<<10, hwm) // KiB on Linux
		if !signalled.IsZero() {
			o.afterSignal = time.Since(signalled)
		}
	}()
	return func() *outcome {
		<-done
		return o
	}
}

// heavy lets two runs that measure for real go at once, for the
// machine's two cores.
var heavy = make(chan struct{}, 2)

// startHeavy is start, once a heavy run's turn comes.
func startHeavy(bin string, r run) func() *outcome {
	ch := make(chan *outcome, 1)
	go func() {
		heavy <- struct{}{}
		o := start(bin, r)()
		<-heavy
		ch <- o
	}()
	var once sync.Once
	var o *outcome
	return func() *outcome {
		once.Do(func() { o = <-ch })
		return o
	}
}

// rss is a process's resident size now and at its peak, from /proc
// (zeroes once it is gone).
func rss(pid int) (now, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			now = n << 10
		case "VmHWM:":
			peak = n << 10
		}
	}
	return now, peak
}
