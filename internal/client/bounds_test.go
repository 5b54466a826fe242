package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

var boundsSecret = []byte("bounds-secret-0123456789")

// farSide is an authenticated agent on a real socket that accepts one
// far test (no data connections) and then does what after says, with
// the control connection; it counts the frames it wrote.
func farSide(t *testing.T, lim wire.Limits, after func(c net.Conn, wrote *atomic.Int64)) (addr string, wrote *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrote = new(atomic.Int64)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var h wire.Hello
		if wire.ReadMagic(c) != nil || wire.Expect(c, wire.THello, &h) != nil {
			return
		}
		nonce := wire.NewNonce()
		wire.WriteFrame(c, wire.TChalleng, wire.Challenge{Version: wire.Version, Session: "s", Nonce: nonce, AuthRequired: true,
			Capabilities: []string{wire.KindCapability(wire.KindDisk)}})
		var a wire.Auth
		if wire.Expect(c, wire.TAuth, &a) != nil || !wire.Verify(boundsSecret, "client", "s", h.Nonce, nonce, a.MAC) {
			return
		}
		wire.WriteFrame(c, wire.TWelcome, wire.Welcome{MAC: wire.Proof(boundsSecret, "agent", "s", h.Nonce, nonce), Limits: lim})
		var spec wire.TestSpec
		if wire.Expect(c, wire.TTest, &spec) != nil {
			return
		}
		wire.WriteFrame(c, wire.TAccepted, wire.Accepted{TestID: "t"})
		if wire.Expect(c, wire.TStart, &wire.Start{}) != nil {
			return
		}
		after(c, wrote)
	}()
	return ln.Addr().String(), wrote
}

func farSpec(d time.Duration) wire.TestSpec {
	return wire.TestSpec{Kind: wire.KindDisk, Duration: d, Interval: 100 * time.Millisecond,
		Disk: &wire.DiskSpec{Path: "/srv", Size: 1 << 20, Patterns: []wire.DiskPattern{{Profile: "data", RW: "randread", Block: 8192, QD: 1, Threads: 1}}}}
}

// TestFarTestBounds: whatever the agent does after Start, RunFar ends
// within the test's bounds, holding no more reports than the test is
// worth, and says what the agent did; Ctrl-C ends it within StopGrace.
func TestFarTestBounds(t *testing.T) {
	record := result.NewInterval("disk", 0, 100*time.Millisecond)
	flood := func(c net.Conn, wrote *atomic.Int64) {
		for {
			if wire.WriteFrame(c, wire.TInterval, wire.Interval{Record: &record}) != nil {
				return
			}
			wrote.Add(1)
		}
	}
	drip := func(c net.Conn, wrote *atomic.Int64) {
		go func() { // reads the Stop, and ignores it
			for {
				if _, err := wire.ReadFrame(c); err != nil {
					return
				}
			}
		}()
		for {
			if wire.WriteFrame(c, wire.TInterval, wire.Interval{Stage: wire.StagePrepare}) != nil {
				return
			}
			wrote.Add(1)
			time.Sleep(90 * time.Millisecond)
		}
	}
	silent := func(c net.Conn, _ *atomic.Int64) { // reads the Stop, says nothing, until the client hangs up
		for {
			if _, err := wire.ReadFrame(c); err != nil {
				return
			}
		}
	}
	lim := wire.Limits{MaxTests: 1, MaxDuration: 10 * time.Minute}
	timeout := time.Second
	cases := []struct {
		name   string
		after  func(net.Conn, *atomic.Int64)
		lim    wire.Limits
		cancel time.Duration // Ctrl-C after this long (0: never)
		within time.Duration
		want   string
	}{
		{"reports as fast as the socket takes them", flood, lim, 0, 5 * time.Second, "frames"},
		// A prepare frame every 90 ms: the agent says it is busy for
		// ever. Its --max-duration, 2 s here, bounds what it may take.
		{"prepare frames for ever", drip, wire.Limits{MaxTests: 1, MaxDuration: 2 * time.Second}, 0, 10 * time.Second, "did not end a test"},
		{"prepare frames for ever, Ctrl-C", drip, lim, 500 * time.Millisecond, 500*time.Millisecond + client.StopGrace + time.Second, "told to stop"},
		{"silent after start", silent, wire.Limits{MaxTests: 1, MaxDuration: 2 * time.Second}, 0, 10 * time.Second, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr, wrote := farSide(t, c.lim, c.after)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := client.Dial(ctx, client.Options{Addr: addr, Secret: boundsSecret, Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if c.cancel > 0 {
				time.AfterFunc(c.cancel, cancel)
			}
			spec := farSpec(200 * time.Millisecond)
			b := client.BoundsOf(spec, c.lim, timeout)
			reports := 0
			t0 := time.Now()
			_, err = s.RunFar(ctx, spec, func(*wire.Accepted) error { return nil }, func(result.Interval) { reports++ })
			took := time.Since(t0)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), addr) {
				t.Fatalf("RunFar = %v, want an error naming %s and saying %q", err, addr, c.want)
			}
			if took > c.within {
				t.Fatalf("RunFar took %s, want at most %s (bounds %+v)", took, c.within, b)
			}
			if reports > b.Reports {
				t.Fatalf("%d reports taken, at most %d are due", reports, b.Reports)
			}
			if c.cancel == 0 && c.want != "" && !errors.Is(err, client.ErrMisbehaved) {
				t.Fatalf("RunFar = %v, want ErrMisbehaved", err)
			}
			// The session is over: the next request gets the same error at once.
			if _, err2 := s.Open(ctx, spec); err2 == nil {
				t.Fatal("a session whose test did not end as it should opened another test")
			}
			t.Logf("%s: %v after %s; the agent wrote %d frames, %d reports taken (bounds %+v)", c.name, err, took.Round(time.Millisecond), wrote.Load(), reports, b)
		})
	}
}

// TestBoundsOf: the bounds come from what the client asked for; the
// agent's limits only lower them.
func TestBoundsOf(t *testing.T) {
	spec := farSpec(3 * time.Second)
	spec.Disk.Patterns = append(spec.Disk.Patterns, spec.Disk.Patterns[0], spec.Disk.Patterns[0])
	spec.Disk.Size = 10 << 30
	spec.Interval = time.Second
	b := client.BoundsOf(spec, wire.Limits{MaxDuration: 1 << 62}, 10*time.Second)
	// 10 GiB at 5 MB/s; 3 patterns of 3 s, each with the 10 s timeout.
	if want := time.Duration(float64(10<<30) / client.MinPrepareRate * float64(time.Second)); b.Prepare != want {
		t.Errorf("prepare %s, want %s (an agent's huge --max-duration is not believed)", b.Prepare, want)
	}
	if b.Run != 39*time.Second || b.Reports != 39+6+8 {
		t.Errorf("run %s, %d reports; want 39s, 53", b.Run, b.Reports)
	}
	if b2 := client.BoundsOf(spec, wire.Limits{MaxDuration: time.Minute}, 10*time.Second); b2.Prepare != time.Minute {
		t.Errorf("prepare %s with an agent's --max-duration of 1m", b2.Prepare)
	}
	rr := client.BoundsOf(wire.TestSpec{Kind: wire.KindRR, Duration: 10 * time.Second, Interval: time.Second}, wire.Limits{}, 10*time.Second)
	if rr.Prepare != 0 || rr.Deadline() != 20*time.Second+2*time.Second+10*time.Second+client.StopGrace {
		t.Errorf("rr bounds %+v", rr)
	}
}
