//go:build windows

package wakeup

import (
	"context"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// TestCanHold: spinners wherever the process may use two CPUs.
func TestCanHold(t *testing.T) {
	set, err := cpus()
	if err != nil {
		t.Fatal(err)
	}
	how, err := canHold()
	t.Logf("CPUs %v: canHold %q, %v", set, how, err)
	if len(set) >= 2 && (err != nil || how != HowSpinners) {
		t.Errorf("canHold on %d CPUs: %q, %v; want %q", len(set), how, err, HowSpinners)
	}
	if len(set) < 2 && err == nil {
		t.Errorf("canHold on one CPU: %q, want an error", how)
	}
}

// TestHold: a spinner on each CPU while held, and release stops them all
// and gives the Ps back.
func TestHold(t *testing.T) {
	set, err := cpus()
	if err != nil || len(set) < 2 {
		t.Skipf("CPUs %v, %v: nothing to hold", set, err)
	}
	before := runtime.GOMAXPROCS(0)
	release, err := hold()
	if err != nil {
		t.Fatal(err)
	}
	if n := spinning.Load(); n != int32(len(set)) {
		t.Errorf("%d spinners running while held, want %d", n, len(set))
	}
	if p := runtime.GOMAXPROCS(0); p != before+len(set) {
		t.Errorf("GOMAXPROCS %d while held, want %d", p, before+len(set))
	}
	release()
	if n := spinning.Load(); n != 0 {
		t.Errorf("%d spinners still running after release", n)
	}
	if p := runtime.GOMAXPROCS(0); p != before {
		t.Errorf("GOMAXPROCS %d after release, want %d as before", p, before)
	}
}

// TestPair: the pinned threads make round trips over their loopback
// connection for as long as asked, and close ends them at once.
func TestPair(t *testing.T) {
	if set, err := cpus(); err != nil || len(set) < 2 {
		t.Skipf("CPUs %v, %v: no pair", set, err)
	}
	before := runtime.GOMAXPROCS(0)
	p, err := newPair()
	if err != nil {
		t.Fatal(err)
	}
	d := 200 * time.Millisecond
	n, took, err := p.run(context.Background(), d)
	if err != nil || n <= 0 || took < d {
		t.Errorf("run(%v): %d round trips in %v, %v; want some, in %v or more", d, n, took, err, d)
	}
	if n > 0 {
		t.Logf("%d round trips in %v, %v each", n, took, took/time.Duration(n))
	}
	closed := make(chan struct{})
	t0 := time.Now()
	go func() {
		p.close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Logf("closed in %v", time.Since(t0))
	case <-time.After(time.Second):
		t.Fatal("close did not return within a second")
	}
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after close, want %d as before", got, before)
	}
}

// TestReceiveTimeout: a peer that does not answer ends the wait in 2 s
// with an error, not a hang (Winsock honours SO_RCVTIMEO only on sockets
// made overlapped).
func TestReceiveTimeout(t *testing.T) {
	c, e, err := loopback()
	if err != nil {
		t.Fatal(err)
	}
	defer windows.Closesocket(e) //nolint:errcheck
	defer windows.Closesocket(c) //nolint:errcheck
	got := make(chan error, 1)
	t0 := time.Now()
	go func() { got <- recvFull(wsaEnd(c), make([]byte, msgSize)) }()
	select {
	case err := <-got:
		took := time.Since(t0)
		t.Logf("recvFull from a silent peer: %v, after %v", err, took)
		if err == nil || took < 1500*time.Millisecond {
			t.Errorf("recvFull from a silent peer: %v after %v; want the timeout's error after about 2 s", err, took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("recvFull from a silent peer still waits after 10 s: no receive timeout")
	}
}
