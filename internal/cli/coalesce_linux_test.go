//go:build linux

package cli_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

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
	killAgentMidTry(t, l.A, l.B, "--try-coalescing", func() bool { return rxFrames(t, l.B) == 1 }, func() bool { return rxFrames(t, l.B) == 16 })
	if got := rxFrames(t, l.B); got != 16 {
		t.Fatalf("rx-frames %d after the agent was killed while it was 1; it was 16", got)
	}
}
