//go:build linux

package testbed

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/testenv"
)

// setRxFrames sets h's device's rx-frames with ethtool (Host.SetRxFrames).
func setRxFrames(t *testing.T, h *Host, frames int) {
	t.Helper()
	if err := h.SetRxFrames(frames); err != nil {
		t.Fatal(err)
	}
}

// setBoth sets rx-frames on both TUN devices, B's (A→B's receiver) first.
func setBoth(t *testing.T, l *DelayLine, frames int) {
	t.Helper()
	setRxFrames(t, l.B, frames)
	setRxFrames(t, l.A, frames)
}

// pingPong is one TCP connection from A to B whose far end echoes each
// message: one outstanding small message at a time, as a query and its
// answer.
type pingPong struct {
	c   net.Conn
	buf []byte
}

const pingSize = 64

func newPingPong(t *testing.T, l *DelayLine) *pingPong {
	t.Helper()
	ln := listenOn(t, l.B)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c) //nolint:errcheck // the echo ends with the connection
			}()
		}
	}()
	var c net.Conn
	if err := l.A.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &pingPong{c: c, buf: make([]byte, pingSize)}
}

// once makes one round trip and returns when it began and how long it took.
func (p *pingPong) once() (time.Time, time.Duration, error) {
	start := time.Now()
	p.c.SetDeadline(start.Add(5 * time.Second)) //nolint:errcheck
	if _, err := p.c.Write(p.buf); err != nil {
		return start, 0, fmt.Errorf("ping: %w", err)
	}
	if _, err := io.ReadFull(p.c, p.buf); err != nil {
		return start, 0, fmt.Errorf("pong: %w", err)
	}
	return start, time.Since(start), nil
}

// one is once for the test's goroutine.
func (p *pingPong) one(t *testing.T) time.Duration {
	t.Helper()
	_, rtt, err := p.once()
	if err != nil {
		t.Fatal(err)
	}
	return rtt
}

// rtts makes n round trips, gap apart, and returns them sorted. The gap
// keeps the line's spinning (forward_linux.go) within its budget, as a
// client that does some work between queries would.
func (p *pingPong) rtts(t *testing.T, n int, gap time.Duration) []time.Duration {
	t.Helper()
	d := make([]time.Duration, 0, n)
	for range n {
		d = append(d, p.one(t))
		time.Sleep(gap)
	}
	slices.Sort(d)
	return d
}

// sample is a round trip, when it began, and whether the line held a
// packet by moderation meanwhile (its own count), A→B and B→A.
type sample struct {
	at   time.Time
	rtt  time.Duration
	held [2]bool
}

// moderationHeld is what each direction of l has held by moderation.
func moderationHeld(l *DelayLine) [2]int64 {
	s := l.Stats()
	return [2]int64{s.AtoB.ModerationHeld, s.BtoA.ModerationHeld}
}

// sendBulk sends size bytes from A to B over a new TCP connection and
// returns how long until B had them all (B answers one byte at the end).
func sendBulk(t *testing.T, l *DelayLine, size int) time.Duration {
	t.Helper()
	ln := listenOn(t, l.B)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck
		if _, err := io.CopyN(io.Discard, c, int64(size)); err == nil {
			c.Write([]byte{1}) //nolint:errcheck
		}
	}()
	var c net.Conn
	if err := l.A.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck
	start := time.Now()
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Fatalf("sending %d bytes: %v", size, err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("the far end's answer after %d bytes: %v", size, err)
	}
	return time.Since(start)
}

// TestDelayLineModeration: the line plays the receiving NIC's interrupt
// moderation (Path.Moderation, 200 µs) as the real TUN devices' rx-frames
// are set with ethtool in their namespaces. At rx-frames 0 round trips
// are the line's base; at 8 each of one outstanding small TCP message and
// its answer, alone in its direction, waits the whole timer: the p50 rises
// by 2 × 200 µs; back at 1 the rise is gone within 10 ms; a 1 MiB stream at
// 8 is delivered mostly as the count fills, not by the timer. And the
// setting's reading stops at rest, and holds again from the next packet.
func TestDelayLineModeration(t *testing.T) {
	if _, err := exec.LookPath("ethtool"); err != nil {
		testenv.Need(t, testenv.NetNS, "no ethtool (scripts/deps.sh installs it): %v", err)
	}
	LockTiming(t)
	const (
		mod  = 200 * time.Microsecond
		n    = 400
		gap  = time.Millisecond
		rise = 2 * mod // one lone packet each way waits the whole timer
		// riseMargin is how far over 2 × the timer the p50 may rise: the
		// line's lateness at the two timers (its own count: 1-2 µs on
		// average, as it spins through the last 50 µs; tens of µs once
		// past its spin budget) and the hosts' scheduling, which moved
		// the two p50s apart by 352-396 µs idle or with one core busy,
		// and by 410-432 µs with both cores busy (13 runs on this
		// project's 2-core VM). The lower bound, 0.8 × 2 × the timer,
		// has the busy runs' 352 µs inside it too.
		riseMargin = 100 * time.Microsecond
	)
	l := NewTestDelayLine(t, DelayLineOptions{Moderation: mod})
	if got := mustRxFrames(t, l.B); got != 0 {
		t.Fatalf("a new TUN device has rx-frames %d, want 0", got)
	}
	pp := newPingPong(t, l)
	pp.rtts(t, 50, gap) // warm up: the connection, the ARP-less path, the caches

	s0 := l.Stats()
	base := pp.rtts(t, n, gap)
	s1 := l.Stats()
	baseP50 := quantile(base, 0.5)
	t.Logf("rx-frames 0: %d round trips: min %v p50 %v p90 %v p99 %v; held by moderation %d+%d",
		n, base[0], baseP50, quantile(base, 0.9), quantile(base, 0.99),
		s1.AtoB.Sub(s0.AtoB).ModerationHeld, s1.BtoA.Sub(s0.BtoA).ModerationHeld)
	if h := s1.AtoB.Sub(s0.AtoB).ModerationHeld + s1.BtoA.Sub(s0.BtoA).ModerationHeld; h != 0 {
		t.Errorf("%d packets held by moderation with rx-frames 0", h)
	}

	setBoth(t, l, 8)
	if got := mustRxFrames(t, l.B); got != 8 {
		t.Fatalf("tun-b has rx-frames %d after ethtool -C rx-frames 8", got)
	}
	time.Sleep(10 * time.Millisecond) // the line reads it every 2 ms
	s2 := l.Stats()
	moderated := pp.rtts(t, n, gap)
	s3 := l.Stats()
	modP50 := quantile(moderated, 0.5)
	ab, ba := s3.AtoB.Sub(s2.AtoB), s3.BtoA.Sub(s2.BtoA)
	t.Logf("rx-frames 8: %d round trips: min %v p50 %v p90 %v p99 %v: p50 %+v (%.2f × 2 × %v)",
		n, moderated[0], modP50, quantile(moderated, 0.9), quantile(moderated, 0.99), modP50-baseP50,
		float64(modP50-baseP50)/float64(rise), mod)
	t.Logf("  A→B: %d packets, %d held (%d by the timer), %v each on average; written %v late on average. B→A: %d packets, %d held (%d by the timer); %v late on average",
		ab.Packets, ab.ModerationHeld, ab.ModerationTimeouts, meanOf(ab.ModerationWait, ab.ModerationHeld), ab.LateMean(),
		ba.Packets, ba.ModerationHeld, ba.ModerationTimeouts, ba.LateMean())
	if r := modP50 - baseP50; r < rise*8/10 || r > rise+riseMargin {
		t.Errorf("rx-frames 8 took the p50 round trip from %v to %v (%+v), want a rise of %v to %v", baseP50, modP50, r, rise*8/10, rise+riseMargin)
	}
	for _, d := range []struct {
		name string
		s    PathStats
	}{{"A→B", ab}, {"B→A", ba}} {
		// One message outstanding: each packet is alone in its direction,
		// so the timer, not the count, delivers every one.
		if d.s.Packets < n || d.s.ModerationTimeouts < d.s.Packets*95/100 {
			t.Errorf("%s: %d packets, %d delivered by the moderation timer: want each lone packet to wait the timer", d.name, d.s.Packets, d.s.ModerationTimeouts)
		}
	}

	// Back to rx-frames 1 while round trips go on: moderation is off within
	// 10 ms of the change.
	var samples []sample
	var pingErr error
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			before := moderationHeld(l)
			at, rtt, err := pp.once()
			if err != nil {
				pingErr = err
				return
			}
			after := moderationHeld(l)
			samples = append(samples, sample{at, rtt, [2]bool{after[0] > before[0], after[1] > before[1]}})
			time.Sleep(gap)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	// Each direction follows its receiving device: A→B tun-b, B→A tun-a.
	var changed [2]time.Time
	changing := time.Now()
	setRxFrames(t, l.B, 1)
	changed[0] = time.Now()
	setRxFrames(t, l.A, 1)
	changed[1] = time.Now()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-done
	if pingErr != nil {
		t.Fatal(pingErr)
	}
	// The end of the last round trip during which a direction held a
	// packet by moderation, after its device's ethtool returned, bounds
	// when the line followed the change (its own count; the round trips'
	// times say the same, below). Negative: it had followed before
	// ethtool returned.
	followed := [2]time.Duration{changing.Sub(changed[0]), changing.Sub(changed[1])} // none moderated since the change began
	var after []time.Duration
	before, heldBefore := 0, 0
	for _, sm := range samples {
		if !sm.at.After(changing) {
			before++
			if sm.held == [2]bool{true, true} {
				heldBefore++
			}
			continue
		}
		for i := range 2 {
			if sm.held[i] {
				followed[i] = max(followed[i], sm.at.Add(sm.rtt).Sub(changed[i]))
			}
		}
		if sm.at.After(changed[1].Add(10 * time.Millisecond)) {
			after = append(after, sm.rtt)
		}
	}
	slices.Sort(after)
	t.Logf("rx-frames 1 (ethtool took %v on tun-b, %v on tun-a): the last round trip the line moderated ended %v (A→B) and %v (B→A) after its device's change; from 10 ms after the changes, %d round trips: p50 %v p90 %v",
		changed[0].Sub(changing).Round(time.Microsecond), changed[1].Sub(changed[0]).Round(time.Microsecond),
		followed[0].Round(time.Microsecond), followed[1].Round(time.Microsecond), len(after), quantile(after, 0.5), quantile(after, 0.9))
	// The counts are published just after a packet is written, so a
	// round trip's reader may now and then look before they are.
	if before < 50 || heldBefore < before*9/10 {
		t.Fatalf("%d round trips before the change, %d of them moderated both ways; want 50 or more, nearly all moderated", before, heldBefore)
	}
	if len(after) < 100 {
		t.Fatalf("only %d round trips in the 290 ms after the change", len(after))
	}
	if p50 := quantile(after, 0.5); p50 > baseP50+rise/4 {
		t.Errorf("back at rx-frames 1, p50 round trip %v, want the line's base %v (within %v)", p50, baseP50, rise/4)
	}
	for i, dir := range []string{"A→B", "B→A"} {
		if followed[i] > 10*time.Millisecond {
			t.Errorf("%s: the line moderated a round trip that ended %v after rx-frames was set back to 1, want within 10 ms", dir, followed[i])
		}
	}

	// A stream with rx-frames 8: its packets come many at a time, and
	// most are delivered as the count fills, without waiting the timer.
	const bulk = 1 << 20
	setBoth(t, l, 0)
	time.Sleep(10 * time.Millisecond)
	plain := sendBulk(t, l, bulk)
	setBoth(t, l, 8)
	time.Sleep(10 * time.Millisecond)
	s4 := l.Stats()
	took := sendBulk(t, l, bulk)
	s5 := l.Stats()
	ab, ba = s5.AtoB.Sub(s4.AtoB), s5.BtoA.Sub(s4.BtoA)
	mbps := func(d time.Duration) float64 { return bulk * 8 / d.Seconds() / 1e6 }
	t.Logf("1 MiB A→B: rx-frames 0 %v (%.0f Mbit/s), rx-frames 8 %v (%.0f Mbit/s)", plain, mbps(plain), took, mbps(took))
	t.Logf("  A→B: %d packets, %d held (%d by the timer), %v each on average. B→A: %d packets, %d held (%d by the timer), %v each on average",
		ab.Packets, ab.ModerationHeld, ab.ModerationTimeouts, meanOf(ab.ModerationWait, ab.ModerationHeld),
		ba.Packets, ba.ModerationHeld, ba.ModerationTimeouts, meanOf(ba.ModerationWait, ba.ModerationHeld))
	// Were every packet a lone one waiting the whole timer, 1 MiB would
	// take its ~730 full segments / 8 × 200 µs at the least; a stream
	// fills the count long before. Held on the line's own counts, not on
	// the transfer's time, which a busy machine sets as it likes.
	if ab.Packets < bulk/1500 || ab.ModerationTimeouts > ab.Packets/4 {
		t.Errorf("A→B: %d of %d packets delivered by the moderation timer, want a stream's packets delivered as rx-frames of them wait (at most a quarter by the timer)", ab.ModerationTimeouts, ab.Packets)
	}
	if w := meanOf(ab.ModerationWait, ab.ModerationHeld); w > mod/2 {
		t.Errorf("A→B: a stream's packets held %v each on average by moderation, want well under the %v timer (at most half)", w, mod)
	}

	// What reading the setting costs (the line does it every
	// rxPollEvery per direction, off its forwarding threads).
	rx, err := openRxCoalescing(l.impl.tuns[1])
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rx.sock)
	const reads = 2000
	began := time.Now()
	for range reads {
		if _, err := rx.read(); err != nil {
			t.Fatal(err)
		}
	}
	took = time.Since(began)
	t.Logf("reading tun-b's rx-frames (ETHTOOL_GCOALESCE): %v each", took/reads)
	// And the forwarder process polling (the round trips above ended
	// just now) and at rest (nothing carried for rxIdleAfter: it stops).
	pid := l.impl.fwd.cmd.Process.Pid
	c0 := tasksCPU(t, pid)
	time.Sleep(500 * time.Millisecond)
	c1 := tasksCPU(t, pid)
	time.Sleep(rxIdleAfter)
	c2 := tasksCPU(t, pid)
	time.Sleep(time.Second)
	c3 := tasksCPU(t, pid)
	t.Logf("the forwarder process: %v of CPU a second while it polls, %v at rest", (c1-c0)*2, c3-c2)
	if c3-c2 > time.Millisecond {
		t.Errorf("the forwarder process took %v of CPU in a second at rest, after %v without a packet; want the polling stopped (none)", c3-c2, rxIdleAfter)
	}
	// A change made at rest holds from the next packet on: each direction
	// reads its device afresh before it delivers its first.
	setBoth(t, l, 1)
	h0 := moderationHeld(l)
	first := pp.one(t)
	time.Sleep(time.Millisecond) // the counts are published just after the write
	if h1 := moderationHeld(l); h1 != h0 {
		t.Errorf("the first round trip after rx-frames 8 was set to 1 at rest took %v, and the line held %d packets A→B and %d B→A by moderation: it went by the setting from before its rest",
			first, h1[0]-h0[0], h1[1]-h0[1])
	}
	// And the poller, woken by that packet, follows again.
	setBoth(t, l, 8)
	time.Sleep(10 * time.Millisecond)
	h0 = moderationHeld(l)
	second := pp.one(t)
	t.Logf("after the rest: the first round trip took %v at rx-frames 1, the next %v at rx-frames 8", first, second)
	want := [2]int64{h0[0] + 1, h0[1] + 1}
	for deadline := time.Now().Add(10 * time.Millisecond); moderationHeld(l) != want && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond) // the counts are published just after the write
	}
	if h1 := moderationHeld(l); h1 != want {
		t.Errorf("the round trip after rx-frames 1 was set back to 8 took %v, the line held %d A→B and %d B→A by moderation, want one each", second, h1[0]-h0[0], h1[1]-h0[1])
	}
}

// tasksCPU is the CPU time the threads of process pid have taken
// (/proc/pid/task/*/schedstat, in ns).
func tasksCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	files, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(files) == 0 {
		t.Fatalf("the forwarder's threads: %v", err)
	}
	var sum time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended
		}
		if fs := strings.Fields(string(b)); len(fs) > 0 {
			v, _ := strconv.ParseInt(fs[0], 10, 64)
			sum += time.Duration(v)
		}
	}
	return sum
}

func meanOf(total time.Duration, n int64) time.Duration {
	if n == 0 {
		return 0
	}
	return total / time.Duration(n)
}

// mustRxFrames is h's device's rx-frames now (Host.RxFrames).
func mustRxFrames(t *testing.T, h *Host) int {
	t.Helper()
	n, err := h.RxFrames()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// listenOn is a TCP listener on h's address, any port.
func listenOn(t *testing.T, h *Host) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp4", net.JoinHostPort(h.Addr.String(), "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ln
}
