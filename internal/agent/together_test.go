package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// TestClockOffset: an agent on this machine shares its clock, so the
// offset read is within the probe's round trip of zero; the probes a
// session may send are bounded.
func TestClockOffset(t *testing.T) {
	a := itest.StartAgent(t, nil)
	s, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Together() {
		t.Fatalf("capabilities %v: no %s", s.Capabilities, wire.CapTogether)
	}
	off, rtt, err := s.ClockOffset(8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("offset %v, round trip %v", off, rtt)
	if rtt <= 0 || rtt > time.Second || off.Abs() > rtt/2+time.Millisecond {
		t.Errorf("one clock read %v apart over a %v round trip", off, rtt)
	}
	// The session's 64 probes spent (8 above), the next is refused.
	if _, _, err := s.ClockOffset(wire.MaxClockProbes - 8); err != nil {
		t.Fatalf("probes within the bound: %v", err)
	}
	if _, _, err := s.ClockOffset(1); err == nil || !strings.Contains(err.Error(), "more than 64 clock probes") {
		t.Errorf("a probe past the session's bound: %v", err)
	}
}

// TestHeldDiskTestsStartTogether: three disk tests on three agents, held
// once prepared, started by one Go each at one instant; each Done says
// when its agent began, within a few milliseconds of the instant. An
// agent that gets no Go ends its held test, saying so.
func TestHeldDiskTestsStartTogether(t *testing.T) {
	type host struct {
		addr, dir string
	}
	var hosts []host
	for range 3 {
		dir := t.TempDir()
		a := itest.StartAgent(t, []string{"--disk-path", dir})
		hosts = append(hosts, host{a.Addr, dir})
	}
	var prepared sync.WaitGroup
	prepared.Add(len(hosts))
	at := make(chan time.Time)
	starts := make([]int64, len(hosts))
	var wg sync.WaitGroup
	errs := make(chan error, len(hosts))
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := dial(t, h.addr, itest.Secret)
			if err != nil {
				errs <- err
				prepared.Done()
				return
			}
			defer s.Close()
			off, _, err := s.ClockOffset(8)
			if err != nil {
				errs <- err
				prepared.Done()
				return
			}
			spec := diskSpec(h.dir)
			spec.Hold = true
			done, err := s.RunHeld(context.Background(), spec, func(*wire.Accepted) error { return nil }, func(result.Interval) {},
				func() (int64, error) {
					prepared.Done()
					return (<-at).Add(off).UnixNano(), nil
				})
			if err != nil {
				errs <- err
				return
			}
			starts[i] = done.Started - off.Nanoseconds()
		}()
	}
	prepared.Wait()
	instant := time.Now().Add(200 * time.Millisecond)
	for range hosts {
		at <- instant
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, st := range starts {
		late := time.Duration(st - instant.UnixNano())
		t.Logf("agent %d began %v after the instant", i, late)
		// Not before it (a test not held would have begun when prepared,
		// 200 ms before); after it by what waking a timer takes, which a
		// loaded machine stretches: the fleet reports the skew it saw.
		if late < -time.Millisecond || late > time.Second {
			t.Errorf("agent %d began %v from the instant", i, late)
		}
	}

	// No Go: the agent's --max-duration ends the held test.
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir, "--max-duration", "1s"})
	s, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spec := diskSpec(dir)
	spec.Hold = true
	_, err = s.RunHeld(context.Background(), spec, func(*wire.Accepted) error { return nil }, func(result.Interval) {},
		func() (int64, error) {
			time.Sleep(1500 * time.Millisecond)
			return time.Now().UnixNano(), nil
		})
	if err == nil || !strings.Contains(err.Error(), "without the client's go") {
		t.Errorf("a held test with no go in time: %v", err)
	}
	// Only a disk test is held.
	s2, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.RunHeld(context.Background(), wire.TestSpec{Kind: wire.KindCPU, Hold: true, Duration: time.Second, Interval: time.Second,
		CPU: &wire.CPUSpec{Codecs: []string{"gzip"}, SampleBytes: 1 << 20, Seed: 1}}, func(*wire.Accepted) error { return nil }, func(result.Interval) {}, nil); err == nil ||
		!strings.Contains(err.Error(), "only a disk test") {
		t.Errorf("a held cpu test: %v", err)
	}
}
