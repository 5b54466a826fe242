//go:build linux

package wakeup

import (
	"runtime"
	"testing"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// TestHoldLetsGo: while held, the CPUs are kept awake the way canHold
// names (the request at 0, or a spinner on each CPU); after release,
// nothing is left: no request, no spinner, GOMAXPROCS as it was.
func TestHoldLetsGo(t *testing.T) {
	how, err := canHold()
	if err != nil {
		t.Skipf("cannot keep the CPUs awake here: %v", err)
	}
	procs := runtime.GOMAXPROCS(0)
	before, _ := sysinfo.CPULatencyHeld()
	release, err := hold()
	if err != nil {
		t.Fatal(err)
	}
	switch how {
	case result.HowLatencyRequest:
		if got, _ := sysinfo.CPULatencyHeld(); got != 0 {
			t.Errorf("held: the CPU latency target is %d µs, want 0", got)
		}
	case result.HowSpinners:
		if set, _ := cpus(); int(spinning.Load()) != len(set) {
			t.Errorf("held: %d spinners, want one on each of %d CPUs", spinning.Load(), len(set))
		}
	}
	release()
	if got, _ := sysinfo.CPULatencyHeld(); got != before {
		t.Errorf("released: the CPU latency target is %d µs, want %d as before", got, before)
	}
	if n := spinning.Load(); n != 0 || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("released: %d spinners left, GOMAXPROCS %d (was %d)", n, runtime.GOMAXPROCS(0), procs)
	}
}
