package command

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestAgentSide: an agent's side is taken only when its figures can be
// true; a hostile agent's are left out, saying why.
func TestAgentSide(t *testing.T) {
	us := func(n int) result.Seconds { return result.Seconds(time.Duration(n) * time.Microsecond) }
	good := func() *result.HostSide {
		return &result.HostSide{Wakeup: &result.Wakeup{Verdict: result.WakeupCosts, PerWake: us(20), PerWakeMargin: us(2), AsIs: us(53), Awake: us(13)}}
	}
	if err := agentSide(good()); err != nil {
		t.Fatalf("an honest side refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		bend func(*result.HostSide)
		want string
	}{
		{"no experiment", func(s *result.HostSide) { s.Wakeup = nil }, "no experiment"},
		{"a verdict of its own", func(s *result.HostSide) { s.Wakeup.Verdict = "\x1b[2Jcosts" }, "a verdict narrows does not give"},
		{"an hour a wake-up", func(s *result.HostSide) { s.Wakeup.PerWake = result.Seconds(time.Hour) }, "a figure of 3600 s a round trip"},
		{"a negative margin", func(s *result.HostSide) { s.Wakeup.PerWakeMargin = -us(1) }, "below zero"},
		{"endless blocks", func(s *result.HostSide) { s.Wakeup.Blocks = make([]result.WakeupBlock, maxAgentBlocks+1) }, "more than any budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.bend(s)
			if err := agentSide(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("agentSide = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
