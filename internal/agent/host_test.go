package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/wire"
)

// TestCheckHost: a host test's budget below the experiment's fewest
// pairs is refused before it runs (it would be cut off unjudged), saying
// what to ask for; one that holds them is taken.
func TestCheckHost(t *testing.T) {
	s := &Server{}
	err := s.checkHost(wire.TestSpec{Kind: wire.KindHost, Duration: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "needs at least 34s") || !strings.Contains(err.Error(), "ask for 34s or more") {
		t.Errorf("a 5 s budget: %v, want a refusal naming the 34 s it needs", err)
	}
	if err := s.checkHost(wire.TestSpec{Kind: wire.KindHost, Duration: 40 * time.Second}); err != nil {
		t.Errorf("a 40 s budget refused: %v", err)
	}
}
