//go:build linux

package cli_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
)

// rxFrames is h's device's rx-frames as ethtool shows it.
func rxFrames(t *testing.T, h *testbed.Host) int {
	t.Helper()
	out, err := h.Command(context.Background(), "ethtool", "-c", h.Dev).CombinedOutput()
	if err != nil {
		t.Fatalf("ethtool -c %s: %v: %s", h.Dev, err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "rx-frames:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("%q", l)
			}
			return n
		}
	}
	t.Fatalf("no rx-frames in:\n%s", out)
	return 0
}

// TestTryCoalescingAgentKilled: an agent killed (SIGKILL: no handler
// runs) while a round-trip test has its interface's coalescing at the
// least leaves nothing changed: the guardian it started first (the
// agent's own program again) puts rx-frames back.
func TestTryCoalescingAgentKilled(t *testing.T) {
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: time.Millisecond})
	if out, err := l.B.Command(context.Background(), "ethtool", "-C", l.B.Dev, "rx-frames", "16").CombinedOutput(); err != nil {
		t.Fatalf("ethtool -C: %v: %s", err, out)
	}
	addr := net.JoinHostPort(l.B.Addr.String(), "7447")
	a := itest.StartAgent(t, []string{"--listen", addr, "--allow-try"}, "ip", "netns", "exec", l.B.NS)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := exec.CommandContext(ctx, "ip", "netns", "exec", l.A.NS, itest.Binary(t),
		"net", "rr", "--to", addr, "--duration", "1s", "--try-coalescing", "--json")
	cli.Env = append(os.Environ(), "NARROWS_SECRET="+itest.Secret)
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	defer cli.Wait() //nolint:errcheck
	deadline := time.Now().Add(30 * time.Second)
	for rxFrames(t, l.B) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the agent never set rx-frames to 1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.Cmd.Process.Kill()
	a.Cmd.Wait() //nolint:errcheck
	deadline = time.Now().Add(5 * time.Second)
	for rxFrames(t, l.B) != 16 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := rxFrames(t, l.B); got != 16 {
		t.Fatalf("rx-frames %d after the agent was killed while it was 1; it was 16", got)
	}
}
