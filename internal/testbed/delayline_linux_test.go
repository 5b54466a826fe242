//go:build linux

package testbed

import (
	"cmp"
	"math"
	"slices"
	"testing"
	"time"
)

// slack is how late a probe may reach the far socket beyond the line's own
// departure time for it, at the median: the sender's path into the line,
// the forwarder's wake-up on its arrival and the last microseconds to its
// departure. Measured on this project's 2-core VMs, idle and with one core
// busy: 25–60 µs (it was 270–430 µs before the line held the CPUs awake,
// procs_linux.go, and spun through the last stretch, forward_linux.go).
const slack = 250 * time.Microsecond

// lateTail bounds the p90 of the same error: the host may take a vCPU
// away for a millisecond now and then, which no guest can prevent, but not
// for one probe in ten.
const lateTail = time.Millisecond

// lineErrors replays the line's shaper for direction stream (1 = A→B,
// 2 = B→A, as NewDelayLine seeds them) over the probes' send times and
// returns, sorted, how much later each probe arrived than the departure
// the model gave it: the line's timing error, probe by probe. size is a
// probe's IP size. The line stamps a packet's arrival when it reads it,
// after it was sent, so a correct line never delivers early: an error
// below zero is a wrong model or a wrong clock. longest is the longest a
// probe waited by the model, its departure less its sending: the delay
// and the queue the line kept, apart from how late it wrote the probe.
func lineErrors(p Path, seed, stream uint64, got []arrival, size int) (errs []time.Duration, longest time.Duration) {
	bySeq := slices.Clone(got)
	slices.SortFunc(bySeq, func(a, b arrival) int { return cmp.Compare(a.seq, b.seq) })
	sh := newShaper(p, seed, stream)
	errs = make([]time.Duration, 0, len(bySeq))
	for _, a := range bySeq {
		sent := a.arrived - a.oneWay
		dep, v := sh.arrive(sent, size)
		if v != forward {
			continue
		}
		errs = append(errs, a.arrived-dep)
		longest = max(longest, dep-sent)
	}
	slices.Sort(errs)
	return errs, longest
}

// lateBy says whether errs, the line's timing error probe by probe
// (sorted), are over checkOnTime's bounds for lateness.
func lateBy(errs []time.Duration) bool {
	return len(errs) > 0 && (quantile(errs, 0.5) > slack || quantile(errs, 0.9) > lateTail)
}

// A run during which the hypervisor takes a vCPU away is no measure of the
// line: every packet due while the forwarder's vCPU is not running leaves
// that much late, and no guest can prevent it. On this project's 2-core
// VMs, idle, 16 runs of 1,000 probes 200 µs apart (TestDelayLineJitter's
// dense ones) in a row: the 6 with no steal or one tick counted in
// /proc/stat had p90 80–112 µs and the line's own latest packet under
// 1.3 ms; the 10 with 40–110 ms stolen had p90 0.58–6.0 ms and 27–168
// packets over 1 ms late by the line's own count. A few minutes later the
// same runs saw no steal at all: it is the host's, and comes and goes.
// Steal is counted in ticks of 10 ms, so a stall long enough to make a
// tenth of the probes late always shows.
//
// measureUnstolen calls run (which measures on a line of its own and
// returns the sorted errors) until a run is within the bounds for
// lateness, or misses them with no steal counted during it (then the
// miss is the line's), or three runs have been made; the caller holds the
// last run to checkOnTime and whatever else it asserts. Where all three
// were late while the hypervisor took the vCPUs away (seen in one CI proof:
// 40, 40 and 60 ms stolen, p90 2.0-2.6 ms late), the line's lateness
// cannot be told from the host's, and checkOnTime does not judge it.
func measureUnstolen(t *testing.T, run func() []time.Duration) timing {
	t.Helper()
	for attempt := 1; ; attempt++ {
		before := stolen(t)
		errs := run()
		took := stolen(t) - before
		if attempt == 3 || took == 0 || !lateBy(errs) {
			if attempt > 1 {
				t.Logf("run %d: the hypervisor took %v of the vCPUs' time during it", attempt, took)
			}
			m := timing{errs: errs}
			if took > 0 && lateBy(errs) {
				m.stolen = took
			}
			return m
		}
		t.Logf("run %d: p50 %v, p90 %v late while the hypervisor took %v of the vCPUs' time (steal): measured again",
			attempt, quantile(errs, 0.5), quantile(errs, 0.9), took)
	}
}

// timing is a run's errors against the line's model, sorted, and the
// steal during it when it was late with some (0: its lateness is the
// line's).
type timing struct {
	errs   []time.Duration
	stolen time.Duration
}

// checkOnTime holds the line's timing error (lineErrors) to never early,
// and, unless every run was late under steal, to slack at the median and
// lateTail at p90.
func checkOnTime(t *testing.T, m timing) {
	t.Helper()
	errs := m.errs
	if len(errs) == 0 {
		t.Fatal("no probes to time")
	}
	p50, p90 := quantile(errs, 0.5), quantile(errs, 0.9)
	t.Logf("the line's error per probe: min %v p50 %v p90 %v p99 %v max %v", errs[0], p50, p90, quantile(errs, 0.99), errs[len(errs)-1])
	// 20 µs: the real-time and monotonic clocks are read once, a few ns
	// apart, and the real-time one is slewed by at most 500 ppm.
	if errs[0] < -20*time.Microsecond {
		t.Errorf("a probe arrived %v before the departure the model gave it", -errs[0])
	}
	if m.stolen > 0 {
		t.Logf("lateness not judged: each of three runs was late while the hypervisor took the vCPUs away (%v in the last): the host's, not the line's", m.stolen)
		return
	}
	if p50 > slack {
		t.Errorf("probes arrived %v after their departure at the median, want at most %v", p50, slack)
	}
	if p90 > lateTail {
		t.Errorf("probes arrived %v after their departure at p90, want at most %v", p90, lateTail)
	}
}

func TestDelayLineDelay(t *testing.T) {
	LockTiming(t)
	l := NewTestDelayLine(t, DelayLineOptions{
		AtoB: &Path{Delay: 5 * time.Millisecond},
		BtoA: &Path{Delay: 15 * time.Millisecond},
	})
	tests := []struct {
		name     string
		src, dst *Host
		delay    time.Duration
	}{
		{"A to B 5ms", l.A, l.B, 5 * time.Millisecond},
		{"B to A 15ms", l.B, l.A, 15 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const n = 200
			// The whole VM can stop for a while (the hypervisor's steal:
			// ~2% of this machine's time, and once a 15.7 ms stall that made
			// 23 of 200 probes late); a stall is no error of the line's, and
			// it recurs in no second run, where a fault of the line's would.
			// So a run whose p90 is over is measured again, at most twice.
			var got []arrival
			var d []time.Duration
			for attempt := 1; ; attempt++ {
				got = newUDPPath(t, tc.src, tc.dst).sendPaced(t, n, 100, 2*time.Millisecond, time.Second)
				d = oneWays(got)
				t.Logf("attempt %d: %d/%d probes: one-way min %v p50 %v p90 %v p99 %v max %v", attempt, len(got), n, d[0], quantile(d, 0.5), quantile(d, 0.9), quantile(d, 0.99), d[len(d)-1])
				if attempt == 3 || len(got) != n || quantile(d, 0.9) <= tc.delay+lateTail {
					break
				}
			}
			if len(got) != n {
				t.Fatalf("%d of %d probes arrived on a line without loss", len(got), n)
			}
			if d[0] < tc.delay {
				t.Errorf("a probe arrived after %v, before the %v delay", d[0], tc.delay)
			}
			if p50 := quantile(d, 0.5); p50 > tc.delay+slack {
				t.Errorf("p50 one-way %v, want %v to %v", p50, tc.delay, tc.delay+slack)
			}
			if p90 := quantile(d, 0.9); p90 > tc.delay+lateTail {
				t.Errorf("p90 one-way %v, want at most %v", p90, tc.delay+lateTail)
			}
			if n := outOfOrder(got); n > 0 {
				t.Errorf("%d probes arrived out of order", n)
			}
		})
	}
	s := l.Stats()
	t.Logf("stats A→B %+v (late mean %v); B→A %+v (late mean %v)", s.AtoB, s.AtoB.LateMean(), s.BtoA, s.BtoA.LateMean())
}

func TestDelayLineJitter(t *testing.T) {
	LockTiming(t)
	const (
		delay  = 10 * time.Millisecond
		jitter = 2 * time.Millisecond
	)
	tests := []struct {
		name    string
		reorder bool
		gap     time.Duration
		n       int
	}{
		// Probes further apart than 2×jitter can never be held back by
		// the one before, so the delays are the raw uniform draws.
		{"uniform, in order", false, 5 * time.Millisecond, 300},
		// Closer than that, order is kept by holding probes back...
		{"dense, order kept", false, 200 * time.Microsecond, 1000},
		// ...unless reordering is allowed.
		{"dense, reordering", true, 200 * time.Microsecond, 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l *DelayLine
			var got []arrival
			// Each probe against the departure the line's own model gave it
			// (the seeded draws replayed, so each run on a new line): the
			// line is on time. That the draws are uniform on
			// [delay−jitter, delay+jitter] is the model's business, held by
			// TestShaperJitter.
			errs := measureUnstolen(t, func() []time.Duration {
				if l != nil {
					l.Close()
				}
				l = NewTestDelayLine(t, DelayLineOptions{RTT: 2 * delay, Jitter: jitter, Reorder: tc.reorder, Seed: 7})
				got = newUDPPath(t, l.A, l.B).sendPaced(t, tc.n, 100, tc.gap, time.Second)
				errs, _ := lineErrors(*l.Options.AtoB, l.Options.Seed, 1, got, 100+udpIPOverhead)
				return errs
			})
			d := oneWays(got)
			if len(got) != tc.n {
				t.Fatalf("%d of %d probes arrived on a line without loss", len(got), tc.n)
			}
			ooo := outOfOrder(got)
			t.Logf("one-way min %v p5 %v p50 %v p95 %v max %v, stddev %v; %d out of order",
				d[0], quantile(d, 0.05), quantile(d, 0.5), quantile(d, 0.95), d[len(d)-1], stddev(d), ooo)
			if d[0] < delay-jitter {
				t.Errorf("min one-way %v below delay−jitter %v", d[0], delay-jitter)
			}
			switch {
			case tc.reorder && ooo == 0:
				t.Errorf("no probe overtook another with jitter %v and probes %v apart", jitter, tc.gap)
			case !tc.reorder && ooo > 0:
				t.Errorf("%d probes out of order, with reordering off", ooo)
			}
			checkOnTime(t, errs)
		})
	}
}

func TestDelayLineLoss(t *testing.T) {
	LockTiming(t) // not timing-sensitive, but its bursts would be others' noise
	tests := []struct {
		name string
		loss float64
		n    int
	}{
		{"0.1%", 0.001, 20000},
		{"1%", 0.01, 20000},
		{"10%", 0.10, 5000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Loss A→B only: B→A must lose nothing.
			l := NewTestDelayLine(t, DelayLineOptions{
				AtoB: &Path{Delay: time.Millisecond, Loss: tc.loss},
				BtoA: &Path{Delay: time.Millisecond},
				Seed: 42,
			})
			ab := newUDPPath(t, l.A, l.B)
			ba := newUDPPath(t, l.B, l.A)
			// In bursts of 250, each sent only once the line has read the
			// one before, so that neither the TUN device's ring nor the
			// receiving socket can overflow (even while the line's thread
			// is held up): the only loss must be the line's.
			got := sendBursts(t, ab, tc.n, 250, func() int64 { return taken(l.Stats().AtoB) })
			back := sendBursts(t, ba, 1000, 250, func() int64 { return taken(l.Stats().BtoA) })
			s := l.Stats()
			dropped := int64(tc.n - len(got))
			mean := tc.loss * float64(tc.n)
			sigma := math.Sqrt(float64(tc.n) * tc.loss * (1 - tc.loss))
			t.Logf("A→B: sent %d, received %d, line dropped %d at random (expected %.0f ± %.1f, so %.3f%% against %.3f%%); stats %+v",
				tc.n, len(got), s.AtoB.DroppedLoss, mean, sigma, 100*float64(dropped)/float64(tc.n), 100*tc.loss, s.AtoB)
			if s.AtoB.DroppedLoss != dropped || s.AtoB.Packets != int64(len(got)) {
				t.Errorf("the line forwarded %d and dropped %d, but %d of %d arrived: loss outside the line",
					s.AtoB.Packets, s.AtoB.DroppedLoss, len(got), tc.n)
			}
			// Four standard deviations: a correct line fails this about
			// once in 16,000 seeds; the seed is fixed, so it never flaps.
			if math.Abs(float64(dropped)-mean) > 4*sigma+1 {
				t.Errorf("dropped %d of %d, want %.0f ± %.0f (4σ)", dropped, tc.n, mean, 4*sigma+1)
			}
			if len(back) != 1000 || s.BtoA.DroppedLoss != 0 {
				t.Errorf("B→A, set without loss, delivered %d of 1000 (dropped %d)", len(back), s.BtoA.DroppedLoss)
			}
		})
	}
}

// taken is how many packets a direction of the line has read.
func taken(s PathStats) int64 {
	return s.Packets + s.WriteErrors + s.Held + s.DroppedLoss + s.DroppedQueue + s.DroppedHeld
}

// sendBursts sends n probes in bursts of burst, each once read() says the
// line has taken all the probes before it.
func sendBursts(t *testing.T, p *udpPath, n, burst int, read func() int64) []arrival {
	t.Helper()
	var got []arrival
	done := make(chan error, 1)
	go func() {
		var err error
		got, err = p.receive(n, time.Second)
		done <- err
	}()
	buf := make([]byte, 64)
	for i := range n {
		if i > 0 && i%burst == 0 {
			for deadline := time.Now().Add(5 * time.Second); read() < int64(i); {
				if time.Now().After(deadline) {
					t.Fatalf("the line took %d of the %d probes sent within 5 s", read(), i)
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
		if err := p.send(uint64(i), 64, buf); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDelayLineRateAndQueue(t *testing.T) {
	LockTiming(t)
	const (
		rate  = 10_000_000 // bit/s
		delay = 5 * time.Millisecond
		size  = 1250 // IP bytes per probe: 1 ms each at 10 Mbit/s
		tx    = size * 8 * time.Second / rate
		burst = 100
	)
	tests := []struct {
		name       string
		queueBytes int64
	}{
		// The whole burst fits: every probe leaves, paced at the rate.
		{"queue holds the burst", 2 * burst * size},
		// 20 probes' worth: the rest of the burst is dropped at the tail.
		{"queue of 20 packets", 20 * size},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l *DelayLine
			var got []arrival
			var longest time.Duration
			// The line's spacing: each probe against the departure the
			// model gives it, replayed over the probes that got through (a
			// dropped one never takes the line). Not the span of the
			// arrivals against (n−1)×tx: that holds only while the sender
			// keeps the queue full, and a sender descheduled mid-burst on
			// a busy machine lets the line idle, as a real one would (seen:
			// 22 arrivals 1.13 ms apart, the line on time throughout).
			//
			// The burst's first probe sets the pace for the rest, so its
			// own lateness (the forwarder woken by its arrival: held by
			// TestDelayLineDelay) carries to every probe after it: what is
			// held here is each probe's error beyond the least of them.
			errs := measureUnstolen(t, func() []time.Duration {
				if l != nil {
					l.Close()
				}
				l = NewTestDelayLine(t, DelayLineOptions{RTT: 2 * delay, RateBitsPerSecond: rate, QueueBytes: tc.queueBytes})
				got = newUDPPath(t, l.A, l.B).sendPaced(t, burst, size-udpIPOverhead, 0, time.Second)
				noDrops := *l.Options.AtoB
				noDrops.QueueBytes = math.MaxInt64
				var errs []time.Duration
				errs, longest = lineErrors(noDrops, l.Options.Seed, 1, got, size)
				if len(errs) > 0 {
					least := errs[0]
					t.Logf("the burst's least error, taken off: %v", least)
					for i := range errs {
						errs[i] -= least
					}
				}
				return errs
			})
			s := l.Stats().AtoB
			d := oneWays(got)
			t.Logf("%d of %d probes arrived, line dropped %d (queue full); one-way min %v max %v; stats %+v",
				len(got), burst, s.DroppedQueue, d[0], d[len(d)-1], s)
			if s.Packets != int64(len(got)) || s.Packets+s.DroppedQueue != burst {
				t.Fatalf("forwarded %d + dropped %d, received %d: want forwarded + dropped = %d = received + dropped",
					s.Packets, s.DroppedQueue, len(got), burst)
			}
			if d[0] < delay+tx {
				t.Errorf("first probe took %v, less than delay + one serialization %v", d[0], delay+tx)
			}
			span := got[len(got)-1].arrived - got[0].arrived
			t.Logf("%d arrivals over %v: %.4f ms apart (%v a packet at the rate)", len(got), span,
				float64(span)/float64(len(got)-1)/1e6, tx)
			checkOnTime(t, errs)
			// Nothing waits longer than the queue allows. Held on the wait
			// the model gives the probes that got through (replayed without
			// a queue limit, so a line that kept more than its queue shows
			// here), not on the latest arrival: how late the line wrote a
			// probe is checkOnTime's, at p50 and p90, and one probe in a
			// hundred written 2.1 ms late by a vCPU woken late (CI, stop 38:
			// p90 16 µs) is the host's, not the queue's.
			maxWait := delay + time.Duration(tc.queueBytes*8)*time.Second/rate + tx
			t.Logf("longest wait by the model %v, the latest arrival %v, a full queue %v", longest, d[len(d)-1], maxWait)
			if longest > maxWait {
				t.Errorf("a probe waited %v by the model, beyond delay + a full queue %v: the line kept more than its queue", longest, maxWait)
			}
			if full := int64(2 * burst * size); tc.queueBytes >= full {
				if s.DroppedQueue != 0 {
					t.Errorf("dropped %d with room for the whole burst", s.DroppedQueue)
				}
				return
			}
			// The sender outpaces the line by far, so the queue's worth (the
			// packet on the line included) plus what drained while the
			// burst was being sent gets through.
			if s.DroppedQueue == 0 || len(got) < 20 || len(got) > 40 {
				t.Errorf("%d delivered and %d dropped; want 20 and a few more delivered", len(got), s.DroppedQueue)
			}
		})
	}
}

// TestDelayLineCarriesItsRate offers a line more than its rate for two
// seconds, in UDP (no congestion control to back off), and requires the
// far end to receive, from the first arrival to the last, the set rate
// within 2%: the line serializes at its rate for as long as it has a
// backlog, whatever else the machine does. TCP throughput through the line
// (TestDelayLineThroughput) is the same figure less what TCP leaves idle.
func TestDelayLineCarriesItsRate(t *testing.T) {
	LockTiming(t)
	const (
		rate    = 50_000_000 // bit/s
		size    = 1250       // IP bytes: 200 µs each at 50 Mbit/s
		offered = 1.1        // × the rate
		d       = 2 * time.Second
	)
	l := NewTestDelayLine(t, DelayLineOptions{RTT: 10 * time.Millisecond, RateBitsPerSecond: rate, QueueDelay: 100 * time.Millisecond})
	p := newUDPPath(t, l.A, l.B)
	n := int(offered * rate * d.Seconds() / 8 / size)
	var got []arrival
	var rerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		got, rerr = p.receive(n, time.Second)
	}()
	// In bursts every millisecond: Go's sleeps are that coarse, and the
	// line's queue (100 ms) absorbs them.
	buf := make([]byte, size)
	perMs := offered * rate / 8 / size / 1000
	start := time.Now()
	for i := 0; i < n; {
		due := int(perMs * float64(time.Since(start)) / float64(time.Millisecond))
		for ; i < min(due+1, n); i++ {
			if err := p.send(uint64(i), size-udpIPOverhead, buf); err != nil {
				t.Fatalf("probe %d: %v", i, err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	<-done
	if rerr != nil {
		t.Fatal(rerr)
	}
	s := l.Stats().AtoB
	if len(got) < 2 {
		t.Fatalf("%d of %d probes arrived", len(got), n)
	}
	span := got[len(got)-1].arrived - got[0].arrived
	carried := float64(len(got)-1) * size * 8 / span.Seconds()
	t.Logf("offered %d probes (%.1f Mbit/s) for %v: %d arrived over %v = %.3f Mbit/s (%+.2f%% from the set %g); line dropped %d (queue full), wrote packets %v late on average, %v at most (%d over 1 ms)",
		n, offered*rate/1e6, d, len(got), span, carried/1e6, 100*(carried/rate-1), float64(rate)/1e6, s.DroppedQueue, s.LateMean(), s.LateMax, s.LateOver1ms)
	if s.Packets != int64(len(got)) {
		t.Errorf("the line delivered %d packets, the far socket received %d", s.Packets, len(got))
	}
	if math.Abs(carried/rate-1) > 0.02 {
		t.Errorf("the line carried %.3f Mbit/s with a backlog, want %g ± 2%%", carried/1e6, float64(rate)/1e6)
	}
}
