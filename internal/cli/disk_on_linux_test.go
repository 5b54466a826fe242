//go:build linux

package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
)

// A custom pattern, briefly: the same run on this machine and on an agent.
var onPattern = []string{"--rw", "mix", "--mix", "60", "--block", "16K", "--qd", "4", "--threads", "2",
	"--duration", "300ms", "--interval", "100ms", "--size", "8M"}

// keys collects the paths of every field of a JSON value ("disk.patterns[].iops").
func keys(v any, prefix string, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			into[prefix+k] = true
			keys(e, prefix+k+".", into)
		}
	case []any:
		for _, e := range x {
			keys(e, strings.TrimSuffix(prefix, ".")+"[].", into)
		}
	}
}

func keySet(vs ...any) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		keys(v, "", m)
	}
	return m
}

// diff lists what a has that b lacks.
func diff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestDiskOnSameAsLocal: `narrows disk --on AGENT --path DIR` prints what
// a local run of the same pattern prints — the same table, the same JSON
// fields in its intervals and summary — its target naming the path on the
// agent and the agent, and its summary saying where it ran; the agent
// leaves nothing in its directory.
func TestDiskOnSameAsLocal(t *testing.T) {
	far, near := t.TempDir(), t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", far})

	local := itest.Run(t, time.Minute, nil, append([]string{"disk", "--path", near, "--json"}, onPattern...)...)
	remote := itest.Run(t, time.Minute, nil, append([]string{"disk", "--on", a.Addr, "--path", far, "--json"}, onPattern...)...)
	if local.Code != 0 || remote.Code != 0 {
		t.Fatalf("local exit %d (%s), remote exit %d (%s)", local.Code, local.Stderr, remote.Code, remote.Stderr)
	}
	livs, lsum := jsonLines(t, local.Stdout)
	rivs, rsum := jsonLines(t, remote.Stdout)
	if len(rivs) == 0 {
		t.Fatal("no interval records from the agent")
	}
	var lany, rany []any
	for _, iv := range livs {
		lany = append(lany, iv)
	}
	for _, iv := range rivs {
		rany = append(rany, iv)
	}
	lk, rk := keySet(lany...), keySet(rany...)
	if d1, d2 := diff(lk, rk), diff(rk, lk); len(d1)+len(d2) > 0 {
		t.Errorf("interval records: only local %v, only remote %v", d1, d2)
	}
	delete(lsum, "findings") // what the figures say differs; how they are put does not
	delete(rsum, "findings")
	if rsum["agent_facts"] == nil || lsum["facts"] == nil {
		t.Errorf("facts of this host %v, of the agent's %v: both runs carry the hosts they measured", lsum["facts"] != nil, rsum["agent_facts"] != nil)
	}
	// The hosts' facts are the interfaces that route where each run
	// looked (none from a local run): they differ by design.
	for _, m := range []map[string]any{lsum, rsum} {
		delete(m, "facts")
		delete(m, "agent_facts")
	}
	lk, rk = keySet(lsum), keySet(rsum)
	if only := diff(lk, rk); len(only) > 0 {
		t.Errorf("summary fields only a local run has: %v", only)
	}
	if only := diff(rk, lk); !slices.Equal(only, []string{"agent_software", "disk.agent"}) {
		t.Errorf("summary fields only a remote run has: %v, want agent_software and disk.agent", only)
	}
	d := rsum["disk"].(map[string]any)
	if rsum["target"] != far+" on "+a.Addr || d["agent"] != a.Addr || d["path"] != far || rsum["partial"] != false {
		t.Errorf("target %v, disk.agent %v, disk.path %v, partial %v", rsum["target"], d["agent"], d["path"], rsum["partial"])
	}
	if p := d["patterns"].([]any); len(p) != 1 || num(t, p[0].(map[string]any), "iops") <= 0 || p[0].(map[string]any)["name"] != "mix 60/40 16 KiB QD4 ×2 threads" {
		t.Errorf("patterns %v", p)
	}

	// The table, as a person reads it.
	table := itest.Run(t, time.Minute, nil, append([]string{"disk", "--on", a.Addr, "--path", far}, onPattern...)...)
	if table.Code != 0 {
		t.Fatalf("exit %d: %s", table.Code, table.Stderr)
	}
	for _, want := range []string{
		"narrows disk → " + far + " on " + a.Addr + ": ", "test file in " + far + " (8 MiB, without a name",
		"profile interval             IOPS         MB/s       p50       p99       max  pattern\ncustom  0.00-",
		"  mix 60/40 16 KiB QD4 ×2 threads\n",
		"\nnarrows disk → " + far + " on " + a.Addr + " (agent " + cli.Version + ")\n",
		"custom: the shape --rw, --block, --qd, --threads and --sync asked for\npattern ", "  reads", "  writes", "What it means:",
	} {
		if !strings.Contains(table.Stdout, want) {
			t.Errorf("no %q in:\n%s", want, table.Stdout)
		}
	}
	if left, _ := os.ReadDir(far); len(left) != 0 {
		t.Errorf("the agent left %v in %s", left, far)
	}
}

// TestDiskOnPathRules: an agent runs disk tests only where its operator
// allowed (--disk-path); a client's --path outside it, with "..", through
// a symbolic link that leads out, or relative is refused in one line
// naming --disk-path, exit 2, and nothing is made there; a directory
// inside, or a link that stays inside, is measured.
func TestDiskOnPathRules(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(allowed, "pg"), 0o700)
	os.Symlink(outside, filepath.Join(allowed, "escape"))
	os.Symlink(filepath.Join(allowed, "pg"), filepath.Join(allowed, "wal"))
	none := itest.StartAgent(t, nil)
	a := itest.StartAgent(t, []string{"--disk-path", allowed})
	brief := []string{"--profile", "backup", "--duration", "100ms", "--interval", "100ms", "--size", "8M", "--json"}
	cases := []struct {
		name  string
		agent *itest.Agent
		path  string
		want  string // the one line on stderr; "" for a run
	}{
		{"no --disk-path on the agent", none, allowed, "runs no disk tests: its operator allows them by starting it with --disk-path DIR"},
		{"outside", a, outside, "--path " + outside + " is outside the directories this agent allows disk tests in: " + allowed + " (its --disk-path)"},
		{"dot-dot", a, allowed + "/../" + filepath.Base(outside), `".." is not allowed`},
		{"dot-dot that stays inside", a, allowed + "/pg/..", `".." is not allowed`},
		{"symbolic link out", a, filepath.Join(allowed, "escape"), "leads to " + outside + " through a symbolic link, outside the directories this agent allows disk tests in: " + allowed + " (its --disk-path)"},
		{"relative", a, "pg", "give an absolute path on the agent, inside " + allowed + " (its --disk-path)"},
		{"missing inside", a, filepath.Join(allowed, "nope"), "does not exist on the agent"},
		{"the directory", a, allowed, ""},
		{"a directory inside", a, filepath.Join(allowed, "pg"), ""},
		{"a symbolic link that stays inside", a, filepath.Join(allowed, "wal"), ""},
		{"no --path: the one allowed directory", a, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"disk", "--on", c.agent.Addr}, brief...)
			if c.path != "" {
				args = append(args, "--path", c.path)
			}
			r := itest.Run(t, time.Minute, nil, args...)
			if c.want == "" {
				if r.Code != 0 {
					t.Fatalf("exit %d: %s", r.Code, r.Stderr)
				}
				if _, s := jsonLines(t, r.Stdout); len(s["disk"].(map[string]any)["patterns"].([]any)) != 2 {
					t.Fatalf("summary %v", s)
				}
				return
			}
			last := strings.TrimSuffix(r.Stderr, "\n")
			if r.Code != cli.ExitUsage || strings.Contains(last, "\n") || !strings.Contains(last, c.want) || r.Stdout != "" {
				t.Fatalf("exit %d, stderr %q, stdout %q; want exit 2 and one line containing %q", r.Code, r.Stderr, r.Stdout, c.want)
			}
		})
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Errorf("the agent made %v outside its --disk-path", left)
	}
	for _, d := range []string{allowed, filepath.Join(allowed, "pg")} {
		if left := itest.DatFiles(t, d); len(left) != 0 {
			t.Errorf("left behind in %s: %v", d, left)
		}
	}
}

// TestDiskOnMaxDiskSize: a test file larger than the agent's
// --max-disk-size is refused in words before anything is written.
func TestDiskOnMaxDiskSize(t *testing.T) {
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir, "--max-disk-size", "8M"})
	r := itest.Run(t, time.Minute, nil, "disk", "--on", a.Addr, "--path", dir, "--profile", "log", "--size", "16M")
	want := "narrows: agent at " + a.Addr + " refused: --size 16 MiB: the agent allows test files up to 8 MiB (its --max-disk-size)\n"
	if r.Code != cli.ExitUsage || r.Stderr != want {
		t.Fatalf("exit %d, stderr %q; want exit 2 and %q", r.Code, r.Stderr, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// waitReleased waits until the agent holds no file in dir, and fails t
// if it still does after limit, a bound far above what it needs (the
// running I/O ends, the file is closed) so that a busy machine holds it.
func waitReleased(t *testing.T, a *itest.Agent, dir string, limit time.Duration, why string) {
	t.Helper()
	pid := a.Cmd.Process.Pid
	t0 := time.Now()
	for len(heldFiles(t, pid, dir)) > 0 {
		if time.Since(t0) > limit {
			t.Fatalf("%s: the agent still holds %v in %s after %s; its log:\n%s", why, heldFiles(t, pid, dir), dir, limit, a.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%s: the agent let go of its test file %s after", why, time.Since(t0).Round(time.Millisecond))
}

// TestDiskOnClientKilled: a disk test takes one of the agent's test
// slots; a client killed mid-test (SIGKILL: it says nothing) stops the
// agent's test at once: the agent closes and removes
// its test file, frees the test slot (--max-tests 1) and the filesystem,
// and the next client's test runs; nothing is left in the directory.
func TestDiskOnClientKilled(t *testing.T) {
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir, "--max-tests", "1"})
	cmd, _, _, out := measuring(t, "disk", "--on", a.Addr, "--path", dir)
	if held := heldFiles(t, a.Cmd.Process.Pid, dir); len(held) != 1 {
		t.Fatalf("the agent holds %v in %s while measuring, want its one test file", held, dir)
	}
	// The disk test holds the agent's one test slot.
	if r := itest.Run(t, time.Minute, nil, "net", "rr", "--to", a.Addr, "--duration", "1s"); r.Code == 0 || !strings.Contains(r.Stderr, "1 test already running (its --max-tests)") {
		t.Fatalf("a second test beside the disk test, --max-tests 1: exit %d, %q", r.Code, r.Stderr)
	}
	cmd.Process.Kill()
	cmd.Wait()
	out.Wait()
	waitReleased(t, a, dir, 20*time.Second, "client killed")
	// The agent closes the test's file, then gives back its slot, then
	// says the test ended: a client let in between the first and the
	// second is told the agent is busy (seen once in CI, 3 ms apart).
	a.WaitLog(t, `err="client gone"`)
	r := itest.Run(t, time.Minute, nil, "disk", "--on", a.Addr, "--path", dir, "--profile", "log", "--duration", "100ms", "--size", "8M", "--json")
	if r.Code != 0 {
		t.Fatalf("the next client: exit %d: %s\nagent log:\n%s", r.Code, r.Stderr, a.Log())
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestDiskOnInterrupted: Ctrl-C on the client stops the agent's test (the
// client sends Stop) and prints what was measured, marked partial, as a
// local run does; the agent removes its file and is free again.
func TestDiskOnInterrupted(t *testing.T) {
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir, "--max-tests", "1"})
	cmd, _, errb, out := measuring(t, "disk", "--on", a.Addr, "--path", dir)
	cmd.Process.Signal(os.Interrupt)
	out.Wait()
	waitExit(t, cmd, 30*time.Second, "SIGINT did not end the remote run")
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitInterrupted || errb.String() != "narrows: interrupted; the figures above are what was measured until then\n" {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	for _, want := range []string{"(stopped: interrupted)", "PARTIAL: the run stopped early (interrupted)", "randread 8 KiB QD1", "(agent " + cli.Version + ")"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	waitReleased(t, a, dir, 20*time.Second, "client interrupted")
	a.WaitLog(t, `end="stopped by the client"`)
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestDiskOnAgentStopped: the agent stopped (SIGTERM) mid-test ends the
// test, closes and removes its file and exits by itself; the client says
// it lost the agent, keeping what it printed.
func TestDiskOnAgentStopped(t *testing.T) {
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir})
	cmd, _, errb, out := measuring(t, "disk", "--on", a.Addr, "--path", dir)
	a.Cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- a.Cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the agent ended with %v; its log:\n%s", err, a.Log())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the agent did not exit after SIGTERM; its log:\n%s", a.Log())
	}
	out.Wait()
	waitExit(t, cmd, 30*time.Second, "the client did not end when its agent did")
	if !strings.Contains(a.Log(), "agent stopped") {
		t.Errorf("the agent did not shut down in order:\n%s", a.Log())
	}
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitFailed || !strings.Contains(errb.String(), "connection to the agent at "+a.Addr+" lost") ||
		!strings.Contains(out.String(), "PARTIAL") {
		t.Fatalf("client: exit %d, stderr %q\n%s", code, errb.String(), out.String())
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}
