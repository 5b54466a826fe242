//go:build linux

package testbed

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testenv"
)

// These tests hold the delay line to the figures issue #5 sets for it,
// read by the tools a person would use: `narrows net rr` and `narrows net
// stream` (and iperf3) run as processes inside the namespaces.

const agentPort = "7447"

// narrowsOn starts an agent in l.B and returns a function that runs a
// narrows client command in l.A against it.
func narrowsOn(t *testing.T, l *DelayLine) func(timeout time.Duration, args ...string) itest.Result {
	t.Helper()
	itest.Binary(t) // build before any clock matters
	agent := itest.StartAgent(t, []string{"--listen", net.JoinHostPort(l.B.Addr.String(), agentPort)}, "ip", "netns", "exec", l.B.NS)
	target := net.JoinHostPort(l.B.Addr.String(), agentPort)
	return func(timeout time.Duration, args ...string) itest.Result {
		t.Helper()
		args = append(append(slices.Clone(args[:2]), "--to", target, "--json"), args[2:]...)
		res := itest.RunWrapped(t, timeout, nil, []string{"ip", "netns", "exec", l.A.NS}, args...)
		if res.Code != 0 {
			t.Fatalf("narrows %v exited %d\nstdout:\n%s\nstderr:\n%s\nagent log:\n%s", args, res.Code, res.Stdout, res.Stderr, agent.Log())
		}
		return res
	}
}

// summaryLine decodes the last JSON line of a narrows run into v.
func summaryLine(t *testing.T, stdout string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("last line of narrows output is not JSON: %v\n%s", err, stdout)
	}
}

// rrSummary is the part of `narrows net rr --json`'s summary these tests read.
type rrSummary struct {
	Partial bool `json:"partial"`
	RR      *struct {
		RoundTrips int64   `json:"round_trips"`
		Min        float64 `json:"rtt_min_seconds"`
		P50        float64 `json:"rtt_p50_seconds"`
		P99        float64 `json:"rtt_p99_seconds"`
		Max        float64 `json:"rtt_max_seconds"`
		KernelMin  float64 `json:"kernel_min_rtt_seconds"`
	} `json:"rr"`
}

func TestDelayLineRTT(t *testing.T) {
	LockTiming(t)
	const rtt = 40 * time.Millisecond
	const tol = time.Millisecond // issue #5: 40 ms ± 1 ms at p50
	l := NewTestDelayLine(t, DelayLineOptions{RTT: rtt})
	tests := []struct {
		name string
		run  func(t *testing.T) (min, p50, p99 time.Duration, n int)
	}{
		{"udp echo", func(t *testing.T) (time.Duration, time.Duration, time.Duration, int) {
			d := udpEcho(t, l, 50, 20*time.Millisecond)
			return d[0], quantile(d, 0.5), quantile(d, 0.99), len(d)
		}},
		{"narrows net rr", func(t *testing.T) (time.Duration, time.Duration, time.Duration, int) {
			res := narrowsOn(t, l)(20*time.Second, "net", "rr", "--duration", "3s")
			var s rrSummary
			summaryLine(t, res.Stdout, &s)
			if s.RR == nil || s.Partial {
				t.Fatalf("no complete rr summary:\n%s", res.Stdout)
			}
			sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
			t.Logf("narrows: %d round trips, kernel min RTT %v", s.RR.RoundTrips, sec(s.RR.KernelMin))
			return sec(s.RR.Min), sec(s.RR.P50), sec(s.RR.P99), int(s.RR.RoundTrips)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, p50, p99, n := tc.run(t)
			t.Logf("%d round trips across a %v link: min %v, p50 %v (%+.3f ms), p99 %v", n, rtt, lo, p50, float64(p50-rtt)/1e6, p99)
			if lo < rtt {
				t.Errorf("a round trip took %v, less than the line's %v", lo, rtt)
			}
			if p50 < rtt-tol || p50 > rtt+tol {
				t.Errorf("p50 round trip %v, want %v ± %v", p50, rtt, tol)
			}
		})
	}
}

// udpEcho sends n probes from A to B, one every gap; B echoes each back.
// It returns the round-trip times, sorted.
func udpEcho(t *testing.T, l *DelayLine, n int, gap time.Duration) []time.Duration {
	t.Helper()
	p := newUDPPath(t, l.A, l.B)
	go func() { // the echo: B's socket answers each probe to its sender
		buf := make([]byte, 2048)
		for {
			k, from, err := p.dst.ReadFromUDP(buf)
			if err != nil {
				return
			}
			p.dst.WriteToUDP(buf[:k], from) //nolint:errcheck
		}
	}()
	done := make(chan []time.Duration, 1)
	go func() {
		var rtts []time.Duration
		buf := make([]byte, 2048)
		for len(rtts) < n {
			p.src.SetReadDeadline(time.Now().Add(time.Second)) //nolint:errcheck
			k, err := p.src.Read(buf)
			if err != nil || k < probeHeader {
				break
			}
			rtts = append(rtts, time.Since(p.base)-time.Duration(binary.BigEndian.Uint64(buf[8:])))
		}
		done <- rtts
	}()
	buf := make([]byte, 64)
	for i := range n {
		if err := p.send(uint64(i), 64, buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(gap)
	}
	rtts := <-done
	if len(rtts) != n {
		t.Fatalf("%d of %d echoes came back on a line without loss", len(rtts), n)
	}
	slices.Sort(rtts)
	return rtts
}

// streamSummary is the part of `narrows net stream --json`'s summary these
// tests read.
type streamSummary struct {
	Partial bool `json:"partial"`
	Stream  *struct {
		Runs []struct {
			Phase       string  `json:"phase"`
			Streams     int     `json:"streams"`
			Throughput  float64 `json:"throughput_bits_per_second"`
			HeaderBytes int64   `json:"header_bytes_per_segment"`
			LinkHeader  int64   `json:"link_header_bytes_per_segment"`
			TCP         *struct {
				MSS int64 `json:"mss_bytes"`
			} `json:"tcp"`
		} `json:"runs"`
	} `json:"stream"`
}

func TestDelayLineThroughput(t *testing.T) {
	LockTiming(t)
	const (
		rate   = 50_000_000 // bit/s
		tol    = 0.05       // issue #5: 50 ± 2.5 Mbit/s with 8 streams
		rounds = 4          // at most, while the best reading is out of bounds
	)
	l := NewTestDelayLine(t, DelayLineOptions{RTT: 20 * time.Millisecond, RateBitsPerSecond: rate})
	run := narrowsOn(t, l)
	haveIperf := exec.Command("iperf3", "--version").Run() == nil
	var narrowsIP, iperfIP []float64
	within := func(xs []float64) bool {
		return len(xs) > 0 && slices.Max(xs) >= rate*(1-tol) && slices.Max(xs) <= rate*(1+tol)
	}
	// The line cannot carry more than its rate, whatever else runs on
	// this machine; other processes can only take readings down. So the
	// best of a few rounds is the line's figure.
	for round := 1; round <= rounds; round++ {
		if within(narrowsIP) && (!haveIperf || within(iperfIP)) {
			break
		}
		before := l.Stats().AtoB
		res := run(30*time.Second, "net", "stream", "--streams", "8", "--duration", "3s")
		after := l.Stats().AtoB
		var s streamSummary
		summaryLine(t, res.Stdout, &s)
		if s.Stream == nil || s.Partial || len(s.Stream.Runs) != 2 {
			t.Fatalf("round %d: want a complete summary with a single and a parallel run:\n%s", round, res.Stdout)
		}
		for _, r := range s.Stream.Runs {
			if r.TCP == nil || r.TCP.MSS == 0 {
				t.Fatalf("round %d: no MSS from TCP_INFO: %s", round, res.Stdout)
			}
			// On the line: the IP packet. A TUN device has no link header,
			// and narrows counts none.
			if r.LinkHeader != 0 {
				t.Errorf("round %d: %d bytes of link header on a TUN device, which has none", round, r.LinkHeader)
			}
			ipRate := r.Throughput * float64(r.TCP.MSS+r.HeaderBytes) / float64(r.TCP.MSS)
			t.Logf("round %d: narrows %s, %d streams: payload %.2f Mbit/s, in IP packets %.2f Mbit/s (MSS %d) = %.4f of the line's rate",
				round, r.Phase, r.Streams, r.Throughput/1e6, ipRate/1e6, r.TCP.MSS, ipRate/rate)
			if r.Phase == "parallel" {
				narrowsIP = append(narrowsIP, ipRate)
			}
		}
		t.Logf("round %d: the line forwarded %d packets, %d bytes A→B; dropped %d (queue full); %d packets more than 1 ms late",
			round, after.Packets-before.Packets, after.Bytes-before.Bytes, after.DroppedQueue-before.DroppedQueue, after.LateOver1ms-before.LateOver1ms)
		if haveIperf {
			payload, mss := iperf3Parallel(t, l, 8, 3)
			ipRate := payload * float64(mss+52) / float64(mss) // IPv4 + TCP with timestamps
			t.Logf("round %d: iperf3 -P 8: payload %.2f Mbit/s, in IP packets %.2f Mbit/s (MSS %d) = %.4f of the line's rate",
				round, payload/1e6, ipRate/1e6, mss, ipRate/rate)
			iperfIP = append(iperfIP, ipRate)
		}
	}
	check := func(name string, readings []float64) {
		t.Run(name, func(t *testing.T) {
			best := slices.Max(readings)
			t.Logf("best of %d: %.2f Mbit/s in IP packets, %+.2f%% from the line's %g Mbit/s", len(readings), best/1e6, 100*(best/rate-1), rate/1e6)
			if !within(readings) {
				t.Errorf("%s carried at best %.2f Mbit/s (rounds %v), want %g ± %.1f Mbit/s", name, best/1e6, readings, rate/1e6, tol*rate/1e6)
			}
		})
	}
	check("narrows net stream --streams 8", narrowsIP)
	if haveIperf {
		check("iperf3 -P 8", iperfIP)
	} else if testenv.Required(testenv.NetNS) {
		t.Error("iperf3 is required here (CI=true or NARROWS_REQUIRE_NETNS=1) but not on PATH: apt-get install iperf3")
	}
}

// iperf3Parallel runs a one-off iperf3 server in B and `iperf3 -P streams`
// from A for seconds, and returns the receiver's payload rate and the MSS.
func iperf3Parallel(t *testing.T, l *DelayLine, streams, seconds int) (bitsPerSecond float64, mss int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+20)*time.Second)
	defer cancel()
	srv := l.B.Command(ctx, "iperf3", "-s", "-1", "-p", "5201", "--forceflush")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatalf("iperf3 server: %v", err)
	}
	defer srv.Wait()         //nolint:errcheck
	defer srv.Process.Kill() //nolint:errcheck // a no-op once it exited after its one test
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "Server listening") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	cli := l.A.Command(ctx, "iperf3", "-c", l.B.Addr.String(), "-p", "5201", "-P", strconv.Itoa(streams), "-t", strconv.Itoa(seconds), "-J")
	js, err := cli.Output()
	var r struct {
		Error string `json:"error"`
		Start struct {
			MSS int64 `json:"tcp_mss_default"`
		} `json:"start"`
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if jerr := json.Unmarshal(js, &r); jerr != nil || err != nil || r.Error != "" {
		t.Fatalf("iperf3 client: %v / %v / %q\n%s", err, jerr, r.Error, js)
	}
	return r.End.SumReceived.BitsPerSecond, r.Start.MSS
}

// TestOneStreamFillsTheLine: across a 20 ms, 100 Mbit/s line with the
// kernel's autotuning, one TCP stream fills the line in each direction,
// and narrows must read that, not a limit of its own making. (Reading in
// 64 KiB batches, SO_RCVLOWAT, held the receive window at 64 KiB for good:
// 18.8 Mbit/s each way.) TCP with a 20 ms RTT ramps up in a few hundred
// milliseconds and then carries ~94% of the line as payload; the best of
// a few rounds must reach 80% (other processes can only take it down).
func TestOneStreamFillsTheLine(t *testing.T) {
	LockTiming(t)
	const rate = 100_000_000
	l := NewTestDelayLine(t, DelayLineOptions{RTT: 20 * time.Millisecond, RateBitsPerSecond: rate})
	run := narrowsOn(t, l)
	for _, dir := range []string{"forward", "reverse"} {
		t.Run(dir, func(t *testing.T) {
			var best float64
			for round := 1; round <= 3 && best < 0.8*rate; round++ {
				args := []string{"net", "stream", "--duration", "3s"}
				if dir == "reverse" {
					args = append(args, "--reverse")
				}
				var s streamSummary
				summaryLine(t, run(30*time.Second, args...).Stdout, &s)
				if s.Stream == nil || len(s.Stream.Runs) != 1 {
					t.Fatalf("round %d: no single-stream run", round)
				}
				got := s.Stream.Runs[0].Throughput
				t.Logf("round %d: one stream %s carried %.1f Mbit/s of payload across a %g Mbit/s line", round, dir, got/1e6, rate/1e6)
				best = max(best, got)
			}
			if best < 0.8*rate {
				t.Errorf("one stream %s carried at best %.1f Mbit/s across a 100 Mbit/s, 20 ms line: narrows held it back", dir, best/1e6)
			}
		})
	}
}
