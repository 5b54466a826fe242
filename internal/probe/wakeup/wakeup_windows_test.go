//go:build windows

package wakeup

import (
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// TestCanHold: spinners wherever the process may use two CPUs.
func TestCanHold(t *testing.T) {
	set, err := cpus()
	if err != nil {
		t.Fatal(err)
	}
	how, err := canHold()
	t.Logf("CPUs %v: canHold %q, %v", set, how, err)
	if len(set) >= 2 && (err != nil || how != result.HowSpinners) {
		t.Errorf("canHold on %d CPUs: %q, %v; want %q", len(set), how, err, result.HowSpinners)
	}
	if len(set) < 2 && err == nil {
		t.Errorf("canHold on one CPU: %q, want an error", how)
	}
}
