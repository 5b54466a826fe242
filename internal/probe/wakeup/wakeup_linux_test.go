//go:build linux

package wakeup

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"testing"
	"time"
)

// latencyTarget is the CPU latency every CPU is held to now, as the
// kernel reads the requests (2,000,000,000 µs: none), or -1 when the file
// cannot be read (not root).
func latencyTarget(t *testing.T) int64 {
	b, err := os.ReadFile(cpuLatencyDev)
	if err != nil || len(b) < 4 {
		return -1
	}
	return int64(int32(binary.NativeEndian.Uint32(b)))
}

// TestHoldLetsGo: while held, the CPUs are kept awake the way canHold
// names (the request at 0, or a spinner on each CPU); after release,
// nothing is left: no request, no spinner, GOMAXPROCS as it was.
func TestHoldLetsGo(t *testing.T) {
	how, err := canHold()
	if err != nil {
		t.Skipf("cannot keep the CPUs awake here: %v", err)
	}
	procs, before := runtime.GOMAXPROCS(0), latencyTarget(t)
	release, err := hold()
	if err != nil {
		t.Fatal(err)
	}
	switch how {
	case HowLatencyRequest:
		if got := latencyTarget(t); got != 0 {
			t.Errorf("held: the CPU latency target is %d µs, want 0", got)
		}
	case HowSpinners:
		if n := spinning.Load(); int(n) != len(cpus()) {
			t.Errorf("held: %d spinners, want one on each of %d CPUs", n, len(cpus()))
		}
	}
	release()
	if got := latencyTarget(t); got != before {
		t.Errorf("released: the CPU latency target is %d µs, want %d as before", got, before)
	}
	if n := spinning.Load(); n != 0 || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("released: %d spinners left, GOMAXPROCS %d (was %d)", n, runtime.GOMAXPROCS(0), procs)
	}
}

// TestSpinnersLetGo: the spinning way, which Linux uses where no request
// is honoured (or narrows is not root), ends every thread it starts.
func TestSpinnersLetGo(t *testing.T) {
	set := cpus()
	if len(set) < 2 {
		t.Skip("one CPU")
	}
	procs := runtime.GOMAXPROCS(0)
	release, err := spin(set, idleOn)
	if err != nil {
		t.Fatal(err)
	}
	if n := spinning.Load(); int(n) != len(set) || runtime.GOMAXPROCS(0) != procs+len(set) {
		t.Errorf("held: %d spinners on %d CPUs, GOMAXPROCS %d (was %d)", n, len(set), runtime.GOMAXPROCS(0), procs)
	}
	release()
	if n := spinning.Load(); n != 0 || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("released: %d spinners left, GOMAXPROCS %d (was %d)", n, runtime.GOMAXPROCS(0), procs)
	}
}

// TestPairRoundTrips: the two threads answer each other until asked to
// stop, and close ends them.
func TestPairRoundTrips(t *testing.T) {
	p, err := newPair()
	if err != nil {
		t.Skipf("no pair here: %v", err)
	}
	n, took, err := p.run(context.Background(), 100*time.Millisecond)
	if err != nil || n < 100 || took < 100*time.Millisecond {
		t.Errorf("run: %d round trips in %v (%v), want 100 or more in 100 ms or more", n, took, err)
	}
	done := make(chan struct{})
	go func() { p.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not end the threads within 5 s")
	}
}
