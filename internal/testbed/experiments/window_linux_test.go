//go:build linux

package experiments

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/testbed"
)

// Experiment 1 of issue #5, single stream against RTT: with the socket
// buffers fixed at W on both ends (`narrows net stream --window W`), one
// stream can have at most one receive window in flight per round trip, so
// it moves window/RTT however fast the link is. The line here has no rate
// limit at all: only delay. narrows must read window/RTT within 10% and
// say the stream is window-limited.
//
// The window is not W. Linux doubles SO_RCVBUF (sk_rcvbuf = 2W, for the
// kernel's own bookkeeping) and advertises only the part of the buffer
// that payload can fill: since 6.6 that is sk_rcvbuf × len/truesize of
// the packets it has received (tcp_win_from_space with the measured
// scaling_ratio; tcp_adv_win_scale is gone). On this path that is about
// 0.62, so W = 64 KiB gives a window of about 80 KB, not 64 KiB. The test
// reads the window the receiver really advertised from the kernel, with
// `ss` at the sender during the run (tcpi_snd_wnd), checks that the buffer
// is 2W, and takes the truth as that window / the RTT the line delivered.
//
// That RTT is the line's set RTT plus what the line itself added: it
// counts how late it wrote every packet, and on a busy 2-core VM (other
// tests, a hypervisor taking its share) it can fall a few hundred µs,
// sometimes milliseconds, behind. Both figures are reported; the set RTT
// alone would blame narrows for the testbed's lateness.

const tolerance = 0.10 // issue #5: within 10%

type windowCase struct {
	window string        // --window
	rtt    time.Duration // the line's
	cc     string        // congestion control of both hosts
	assert bool          // an issue #5 point; the others are recorded only
}

func windowCases() ([]windowCase, time.Duration) {
	// Both hosts run reno, as a loss-based congestion control (cubic, the
	// Linux default that database hosts mostly run, is not among this
	// kernel's allowed ones inside a namespace; reno fills a window the
	// same way). Under bbr, this VM's default, the stream is paced and
	// rarely waits on the window, which the long run records.
	short := []windowCase{
		{"64K", 10 * time.Millisecond, "reno", true},
		{"64K", 40 * time.Millisecond, "reno", true},
		{"64K", 80 * time.Millisecond, "reno", true},
	}
	if !long() {
		return short, 4 * time.Second
	}
	cases := slices.Clone(short)
	for _, rtt := range []time.Duration{20 * time.Millisecond, 160 * time.Millisecond} {
		cases = append(cases, windowCase{"64K", rtt, "reno", false})
	}
	for _, rtt := range []time.Duration{40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond} {
		cases = append(cases, windowCase{"128K", rtt, "reno", false})
	}
	for _, rtt := range []time.Duration{10 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond} {
		cases = append(cases, windowCase{"64K", rtt, "bbr", false})
	}
	return cases, 10 * time.Second
}

// windowRound is one measurement of one case.
type windowRound struct {
	reading   float64 // narrows' single-stream throughput, bit/s
	window    int64   // the largest window the receiver advertised
	rcvBuf    int64   // the receiver's sk_rcvbuf
	nominal   float64 // window × 8 / the line's set RTT
	late      time.Duration
	expected  float64 // window × 8 / the RTT the line delivered (set + its lateness both ways)
	verdict   string  // narrows' stream.*_limited finding
	rwnd, snd float64 // narrows' window-stall shares
	tcpRTT    float64 // narrows' mean smoothed RTT, s
	cc        string  // as ss saw it on the data connection
	samples   int
	line      string // how well the line kept time meanwhile
}

// lateBetween is how many packets one direction of the line delivered
// between two snapshots, and how late it wrote them on average.
func lateBetween(b, a testbed.PathStats) (packets int64, mean time.Duration) {
	if n := a.Packets - b.Packets; n > 0 {
		return n, (a.LateTotal - b.LateTotal) / time.Duration(n)
	}
	return 0, 0
}

// lineLate is how much later than set, on average, the line delivered
// packets each way between two snapshots: what it added to the RTT.
func lineLate(b, a testbed.DelayLineStats) time.Duration {
	_, ab := lateBetween(b.AtoB, a.AtoB)
	_, ba := lateBetween(b.BtoA, a.BtoA)
	return ab + ba
}

// lineRecord says how late the line wrote packets between two snapshots:
// the testbed's own error during a measurement.
func lineRecord(b, a testbed.DelayLineStats) string {
	d := func(b, a testbed.PathStats) string {
		n, late := lateBetween(b, a)
		if n == 0 {
			return "idle"
		}
		return fmt.Sprintf("%d packets, late %v on average, %d over 1 ms", n, late.Round(time.Microsecond), a.LateOver1ms-b.LateOver1ms)
	}
	return "line A→B " + d(b.AtoB, a.AtoB) + "; B→A " + d(b.BtoA, a.BtoA)
}

func (r windowRound) ratio() float64 { return r.reading / r.expected }

func (r windowRound) ok() bool {
	return math.Abs(r.ratio()-1) <= tolerance && r.verdict == "stream.window_limited"
}

func TestWindowVsRTT(t *testing.T) {
	cases, duration := windowCases()
	setUp(t, 1)
	const rounds = 3 // at most, while a round misses: a busy machine only lowers readings
	var table []string
	for _, tc := range cases {
		name := fmt.Sprintf("W=%s RTT=%v %s", tc.window, tc.rtt, tc.cc)
		t.Run(name, func(t *testing.T) {
			w, err := metric.ParseSize(tc.window)
			if err != nil {
				t.Fatal(err)
			}
			l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: tc.rtt})
			for _, h := range l.Hosts() {
				setCC(t, h, tc.cc)
			}
			startAgent(t, l)
			var got []windowRound
			for round := 1; round <= rounds; round++ {
				r := measureWindow(t, l, tc, w, duration)
				got = append(got, r)
				t.Logf("round %d: narrows %.2f Mbit/s; window %d B (receiver's buffer %d B = 2 × %d; window = %.3f of it) → window/RTT %.2f Mbit/s (line %v late both ways together: %.2f Mbit/s); ratio %.3f (%.3f of the nominal); verdict %s (rwnd %.2f, sndbuf %.2f); TCP RTT %.1f ms; %s; %d ss samples; %s",
					round, r.reading/1e6, r.window, r.rcvBuf, w, float64(r.window)/float64(r.rcvBuf), r.nominal/1e6, r.late.Round(time.Microsecond), r.expected/1e6, r.ratio(), r.reading/r.nominal, r.verdict, r.rwnd, r.snd, 1e3*r.tcpRTT, r.cc, r.samples, r.line)
				if r.ok() || !tc.assert { // a recorded-only case gets one round
					break
				}
			}
			best := slices.MaxFunc(got, func(a, b windowRound) int {
				return cmpBool(a.ok(), b.ok())*2 + cmpFloat(-math.Abs(a.ratio()-1), -math.Abs(b.ratio()-1))
			})
			var ctl string
			if long() {
				ctl = iperf3Control(t, l, tc.window, duration, best.nominal)
			}
			row := fmt.Sprintf("| %s | %v | %s | %d | %.2f | %v | %.2f | %.2f | %.3f (%.3f) | %s | %.2f / %.2f |%s",
				tc.window, tc.rtt, tc.cc, best.window, best.nominal/1e6, best.late.Round(10*time.Microsecond), best.expected/1e6,
				best.reading/1e6, best.ratio(), best.reading/best.nominal, strings.TrimPrefix(best.verdict, "stream."), best.rwnd, best.snd, ctl)
			table = append(table, row)
			if !tc.assert {
				return
			}
			if best.rcvBuf != 2*w {
				t.Errorf("the receiver's sk_rcvbuf is %d, want 2 × %d: the kernel doubles SO_RCVBUF (unless capped by net.core.rmem_max)", best.rcvBuf, w)
			}
			if math.Abs(best.ratio()-1) > tolerance {
				t.Errorf("narrows read %.2f Mbit/s at best of %d rounds; window/RTT is %.2f Mbit/s (%d B / (%v + the line's %v)): off by %+.1f%%, more than %.0f%%",
					best.reading/1e6, len(got), best.expected/1e6, best.window, tc.rtt, best.late, 100*(best.ratio()-1), 100*tolerance)
			}
			if best.verdict != "stream.window_limited" {
				t.Errorf("narrows' verdict is %s (rwnd %.2f, sndbuf %.2f), want stream.window_limited", best.verdict, best.rwnd, best.snd)
			}
		})
	}
	t.Logf("| W | RTT | CC | window (B) | window/RTT (Mbit/s) | line late | window/delivered RTT (Mbit/s) | narrows (Mbit/s) | ratio (to nominal) | verdict | rwnd / sndbuf stalls |%s\n%s",
		map[bool]string{true: " iperf3 -w W (Mbit/s, ratio to nominal) |", false: ""}[long()], strings.Join(table, "\n"))
}

// measureWindow runs one `narrows net stream --window W` across l while
// watching the data connection with ss.
func measureWindow(t *testing.T, l *testbed.DelayLine, tc windowCase, w int64, duration time.Duration) windowRound {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := l.Stats()
	watch := watchWindow(ctx, t, l.A, l.B, agentPort, 250*time.Millisecond)
	s := runStream(t, l, duration, "--window", tc.window)
	cancel()
	after := l.Stats()
	r0, late := lineRecord(before, after), lineLate(before, after)
	if s.Partial || len(s.Stream.Runs) != 1 || s.Stream.Runs[0].TCP == nil {
		t.Fatalf("want a complete one-stream summary with TCP figures: %+v", s)
	}
	tcp := s.Stream.Runs[0].TCP
	maxWnd, snd, rcv, n := watch.result()
	r := windowRound{line: r0, reading: s.Stream.Throughput, window: max(maxWnd, tcp.PeerWindow), rcvBuf: rcv.RcvBuf,
		rwnd: tcp.RwndLimited, snd: tcp.SndbufLimited, tcpRTT: tcp.RTT, cc: snd.CC, samples: n, verdict: s.verdict()}
	if n == 0 {
		t.Fatalf("ss never saw the data connection")
	}
	if snd.CC != tc.cc {
		t.Fatalf("the data connection runs %q, want %q", snd.CC, tc.cc)
	}
	r.nominal = float64(r.window) * 8 / tc.rtt.Seconds()
	r.late = late
	r.expected = float64(r.window) * 8 / (tc.rtt + late).Seconds()
	return r
}

// iperf3Control measures the same window with iperf3 -w, for the record:
// what another tool reads on the same line.
func iperf3Control(t *testing.T, l *testbed.DelayLine, window string, duration time.Duration, expected float64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), duration+30*time.Second)
	defer cancel()
	srv := l.B.Command(ctx, "iperf3", "-s", "-1", "-p", "5201")
	if err := itest.StartTied(srv); err != nil {
		t.Logf("iperf3 control skipped: %v", err)
		return " - |"
	}
	defer srv.Wait() //nolint:errcheck
	out, err := iperf3Client(ctx, l.A, "iperf3", "-c", l.B.Addr.String(), "-p", "5201", "-w", window,
		"-t", strconv.Itoa(int(duration.Seconds())), "-J")
	bps, jerr := iperf3Received(out)
	if err != nil || jerr != nil {
		t.Logf("iperf3 control failed: %v %v", err, jerr)
		srv.Process.Kill() //nolint:errcheck
		return " - |"
	}
	t.Logf("control: iperf3 -w %s: %.2f Mbit/s = %.3f of window/RTT (nominal)", window, bps/1e6, bps/expected)
	return fmt.Sprintf(" %.2f (%.3f) |", bps/1e6, bps/expected)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
