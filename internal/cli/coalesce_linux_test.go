//go:build linux

package cli_test

import (
	"testing"
	"time"

	"github.com/narrows/narrows/internal/testbed"
)

// rxFrames is h's device's rx-frames now (testbed.Host.RxFrames).
func rxFrames(t *testing.T, h *testbed.Host) int {
	t.Helper()
	n, err := h.RxFrames()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTryCoalescingAgentKilled: an agent killed (SIGKILL: no handler
// runs) while a round-trip test has its interface's coalescing at the
// least leaves nothing changed: the guardian it started first (the
// agent's own program again) puts rx-frames back.
func TestTryCoalescingAgentKilled(t *testing.T) {
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: time.Millisecond})
	if err := l.B.SetRxFrames(16); err != nil {
		t.Fatal(err)
	}
	killAgentMidTry(t, l.A, l.B, "--try-coalescing", func() bool { return rxFrames(t, l.B) == 1 }, func() bool { return rxFrames(t, l.B) == 16 })
	if got := rxFrames(t, l.B); got != 16 {
		t.Fatalf("rx-frames %d after the agent was killed while it was 1; it was 16", got)
	}
}
