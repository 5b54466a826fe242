//go:build linux

package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
)

// TestNetCommitJSON: a run acknowledged at flush on a real file: the
// blocks and bytes exact, one flush per block with one in flight, each
// commit at least the agent's flush, interval records as it runs, and
// nothing left in the directory; with 8 in flight the agent flushes
// blocks together.
func TestNetCommitJSON(t *testing.T) {
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir})
	r := itest.Run(t, time.Minute, nil, "net", "commit", "--to", a.Addr, "--duration", "1s", "--interval", "250ms", "--size", "4M", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	ivs, s := jsonLines(t, r.Stdout)
	if len(ivs) < 2 || ivs[0]["probe"] != "commit" {
		t.Fatalf("%d interval records: %v", len(ivs), ivs)
	}
	c := s["commit"].(map[string]any)
	commits, flushes := num(t, c, "commits"), num(t, c, "flushes")
	if commits == 0 || num(t, c, "bytes") != commits*8192 || flushes != commits || s["partial"] != false {
		t.Fatalf("%v commits, %v bytes, %v flushes, partial %v", commits, c["bytes"], flushes, s["partial"])
	}
	if p50, f50 := num(t, c, "commit_latency", "latency_p50_seconds"), num(t, c, "agent_flush_latency", "latency_p50_seconds"); p50 < 0.99*f50 {
		t.Errorf("commit p50 %v below the agent's flush p50 %v", p50, f50)
	}
	cfg := c["config"].(map[string]any)
	if cfg["ack"] != "flush" || cfg["flush"] != "fdatasync" || cfg["path"] != dir || num(t, cfg, "in_flight") != 1 {
		t.Errorf("config %v", cfg)
	}
	if len(s["findings"].([]any)) == 0 {
		t.Error("no findings")
	}
	r = itest.Run(t, time.Minute, nil, "net", "commit", "--to", a.Addr, "--duration", "1s", "--in-flight", "8", "--block", "4K", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	_, s = jsonLines(t, r.Stdout)
	c = s["commit"].(map[string]any)
	if commits, flushes := num(t, c, "commits"), num(t, c, "flushes"); flushes < 1 || flushes >= commits || num(t, c, "bytes") != commits*4096 {
		t.Fatalf("8 in flight: %v commits, %v flushes", commits, flushes)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestNetCommitReceiveOnly: against an agent without --disk-path, a run
// that asked for no acknowledgement point runs on receipt and says so,
// in the table and in JSON; one that asked for flush is refused in one
// line that says what to do, exit 2.
func TestNetCommitReceiveOnly(t *testing.T) {
	a := itest.StartAgent(t, nil)
	r := itest.Run(t, time.Minute, nil, "net", "commit", "--to", a.Addr, "--duration", "500ms", "--interval", "250ms")
	if r.Code != 0 || !strings.Contains(r.Stdout, "acknowledged after receipt (read off the socket, nothing written)") ||
		!strings.Contains(r.Stdout, "note         receive only: the agent at "+a.Addr+" writes no files (it was started without --disk-path)") {
		t.Fatalf("exit %d, stderr %q:\n%s", r.Code, r.Stderr, r.Stdout)
	}
	r = itest.Run(t, time.Minute, nil, "net", "commit", "--to", a.Addr, "--duration", "500ms", "--json")
	_, s := jsonLines(t, r.Stdout)
	c := s["commit"].(map[string]any)
	if r.Code != 0 || c["config"].(map[string]any)["ack"] != "receive" || !strings.HasPrefix(c["notes"].([]any)[0].(string), "receive only: ") || c["agent_flush_latency"] != nil {
		t.Fatalf("exit %d: %v", r.Code, c)
	}
	for _, args := range [][]string{{"--ack", "flush"}, {"--ack", "write"}, {"--path", "/tmp"}} {
		r = itest.Run(t, time.Minute, nil, append([]string{"net", "commit", "--to", a.Addr, "--duration", "500ms"}, args...)...)
		if r.Code != cli.ExitUsage || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, "writes no files (it was started without --disk-path), so it acknowledges on receipt only: restart it with --disk-path DIR") || r.Stdout != "" {
			t.Fatalf("%v: exit %d, stderr %q, stdout %q", args, r.Code, r.Stderr, r.Stdout)
		}
	}
}

// TestNetCommitBadInput: what cannot run is refused in one line, exit 2,
// before anything is written: bad flags, a directory outside the
// agent's --disk-path, more buffers than it allows.
func TestNetCommitBadInput(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir, "--max-test-memory", "1M"})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--block", "2M"}, "--block 2 MiB: use 512 B to 1 MiB"},
		{[]string{"--in-flight", "0"}, "--in-flight 0: use 1 to 1024"},
		{[]string{"--ack", "apply"}, `--ack "apply": use receive, write or flush`},
		{[]string{"--ack", "write", "--flush", "dsync"}, "--flush dsync goes with --ack flush"},
		{[]string{"--ack", "receive", "--path", dir}, "--ack receive writes no file"},
		{[]string{"--path", outside}, "--path " + outside + " is outside the directories this agent allows disk tests in: " + dir + " (its --disk-path)"},
		{[]string{"--in-flight", "256"}, "--in-flight 256 blocks of 8 KiB need 2 MiB of buffers on the agent at " + a.Addr + ", which allows 1 MiB per test (its --max-test-memory): use --in-flight 128 or fewer"},
	} {
		r := itest.Run(t, time.Minute, nil, append([]string{"net", "commit", "--to", a.Addr, "--duration", "1s"}, c.args...)...)
		if r.Code != cli.ExitUsage || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, c.want) || r.Stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and %q", c.args, r.Code, r.Stderr, r.Stdout, c.want)
		}
	}
	for _, d := range []string{dir, outside} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Fatalf("left behind in %s: %v", d, left)
		}
	}
}

// TestNetCommitClientKilled: a client killed mid-run (SIGKILL: it says
// nothing) ends the agent's test at once: it lets go of its log file,
// which leaves nothing behind, and of the filesystem, so the next client's
// test runs; Ctrl-C ends a run with what was measured, marked partial.
func TestNetCommitClientKilled(t *testing.T) {
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir, "--max-tests", "1"})
	start := func() (*exec.Cmd, *bytes.Buffer, *itest.Output) {
		cmd, _, errb, out := measuringRows(t, "0.", "net", "commit", "--to", a.Addr)
		return cmd, errb, out
	}
	cmd, _, out := start()
	if held := heldFiles(t, a.Cmd.Process.Pid, dir); len(held) != 1 {
		t.Fatalf("the agent holds %v in %s while measuring, want its one log file", held, dir)
	}
	cmd.Process.Kill()
	cmd.Wait()
	out.Wait()
	waitReleased(t, a, dir, 20*time.Second, "client killed")
	a.WaitLog(t, `err="client gone"`)

	cmd, errb, out := start()
	cmd.Process.Signal(os.Interrupt)
	out.Wait()
	waitExit(t, cmd, 30*time.Second, "SIGINT did not end the run")
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitInterrupted || !strings.Contains(out.String(), "PARTIAL: the run stopped early (interrupted)") ||
		!strings.Contains(out.String(), "stopped      interrupted") {
		t.Fatalf("exit %d, stderr %q:\n%s", code, errb.String(), out.String())
	}
	waitReleased(t, a, dir, 20*time.Second, "client interrupted")
	// The slot is given back after the file, before the test's end is
	// logged (TestDiskOnClientKilled).
	a.WaitLog(t, `end="stopped by the client"`)
	r := itest.Run(t, time.Minute, nil, "net", "commit", "--to", a.Addr, "--duration", "300ms", "--size", "4M", "--json")
	if r.Code != 0 {
		t.Fatalf("the next client: exit %d: %s\nagent log:\n%s", r.Code, r.Stderr, a.Log())
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}
