//go:build linux || windows

package wakeup

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestSpinnersLetGo: a spinner on each CPU while held (with a P of its
// own), and release stops them all and gives the Ps back: the way
// Windows keeps CPUs awake, and Linux where no request is honoured.
func TestSpinnersLetGo(t *testing.T) {
	set, err := cpus()
	if err != nil || len(set) < 2 {
		t.Skipf("CPUs %v, %v: nothing to spin on", set, err)
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

// TestPairRoundTrips: the pinned threads make round trips over their
// loopback connection for as long as asked, and close ends them at once
// and gives the pair's Ps back.
func TestPairRoundTrips(t *testing.T) {
	if set, err := cpus(); err != nil || len(set) < 2 {
		t.Skipf("CPUs %v, %v: no pair", set, err)
	}
	procs := runtime.GOMAXPROCS(0)
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
	done := make(chan struct{})
	t0 := time.Now()
	go func() { p.close(); close(done) }()
	select {
	case <-done:
		t.Logf("closed in %v", time.Since(t0))
	case <-time.After(5 * time.Second):
		t.Fatal("close did not end the threads within 5 s")
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after close, want %d as before", got, procs)
	}
}

// TestReceiveTimeout: a peer that does not answer ends the wait in 2 s
// with an error, not a hang (on Windows, Winsock honours SO_RCVTIMEO
// only on sockets made overlapped; on Linux, netio's deadline).
func TestReceiveTimeout(t *testing.T) {
	c, e, err := loopback()
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	defer c.close()
	got := make(chan error, 1)
	t0 := time.Now()
	go func() { got <- recvFull(c, make([]byte, msgSize)) }()
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
