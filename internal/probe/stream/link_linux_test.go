package stream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testenv"
)

// The shaped link both tools measure, and what each run asks for.
const (
	linkRate    = 200_000_000 // bit/s, tbf on both veth ends
	runSeconds  = 5
	blockSize   = "128K"
	agentPort   = "7447"
	iperf3Port  = "5201"
	rounds      = 2 // narrows, iperf3, narrows, iperf3
	maxRounds   = 4 // while the best rounds disagree (a busy machine)
	clientLimit = 25 * time.Second

	// Acceptance bounds.
	maxToolGap   = 0.03 // narrows vs iperf3, relative to iperf3
	wireTol      = 0.05 // wire throughput vs the tbf rate
	minGoodShare = 0.92 // payload / tbf rate
	maxGoodShare = 0.96

	// On a 1500-byte MTU with TCP timestamps (Linux default): 20 IP + 20
	// TCP + 12 timestamp option = 52 bytes of headers, so MSS 1448, and tbf
	// on a veth also counts the 14-byte Ethernet header: 66 per segment.
	wantMSS    = 1448
	wantHeader = 66
)

// streamSummary is the part of `narrows net stream --json`'s last line this
// test reads, decoded by its JSON names (the contract scripts rely on).
type streamSummary struct {
	Type    string `json:"type"`
	Partial bool   `json:"partial"`
	Error   string `json:"error"`
	Stream  *struct {
		Throughput float64 `json:"throughput_bits_per_second"`
		Runs       []struct {
			Phase          string  `json:"phase"`
			Direction      string  `json:"direction"`
			Streams        int     `json:"streams"`
			Duration       float64 `json:"duration_seconds"`
			SentBytes      int64   `json:"sent_bytes"`
			ReceivedBytes  int64   `json:"received_bytes"`
			Throughput     float64 `json:"throughput_bits_per_second"`
			WireThroughput float64 `json:"wire_throughput_bits_per_second"`
			HeaderBytes    int64   `json:"header_bytes_per_segment"`
			TCP            *struct {
				RTT          float64 `json:"rtt_seconds"`
				MinRTT       float64 `json:"min_rtt_seconds"`
				MSS          int64   `json:"mss_bytes"`
				MaxCwnd      int64   `json:"max_cwnd_bytes"`
				Retransmits  int64   `json:"retransmits"`
				RetransRatio float64 `json:"retransmit_ratio"`
			} `json:"tcp"`
			TCPUnavailable string `json:"tcp_unavailable"`
			CPU            struct {
				Local  float64 `json:"local_percent_of_core"`
				Remote float64 `json:"remote_percent_of_core"`
			} `json:"cpu"`
		} `json:"runs"`
	} `json:"stream"`
	Findings []struct {
		Code    string             `json:"code"`
		Summary string             `json:"summary"`
		Values  map[string]float64 `json:"values"`
	} `json:"findings"`
}

// iperf3Result is the part of `iperf3 -c ... -J` this test reads.
type iperf3Result struct {
	Error string `json:"error"`
	Start struct {
		TCPMSSDefault int64 `json:"tcp_mss_default"`
	} `json:"start"`
	End struct {
		SumSent struct {
			Seconds     float64 `json:"seconds"`
			Bytes       int64   `json:"bytes"`
			BitsPerSec  float64 `json:"bits_per_second"`
			Retransmits int64   `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Seconds    float64 `json:"seconds"`
			Bytes      int64   `json:"bytes"`
			BitsPerSec float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
}

// TestStreamMatchesIperf3OnShapedLink runs `narrows net stream` and iperf3
// (one stream, same duration and block size) in turn over one real link
// shaped to 200 Mbit/s by tbf, and checks that narrows reports what iperf3
// reports, and that its wire figure accounts for the headers tbf counts
// (payload is about 1448/1514 of the shaped rate).
func TestStreamMatchesIperf3OnShapedLink(t *testing.T) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		testenv.Need(t, testenv.NetNS, "iperf3 is not on PATH (%v): install it (Debian: apt-get install iperf3) to compare narrows against it", err)
	}
	link := testbed.NewTestLink(t, testbed.LinkOptions{RateBitsPerSecond: linkRate})
	a, b := link.A, link.B
	t.Logf("link: %s -> %s, tbf rate %d bit/s, burst %d bytes, MTU %d", a, b, link.Options.RateBitsPerSecond, link.Options.BurstBytes, link.Options.MTU)

	itest.Binary(t) // build before the clock matters
	agent := itest.StartAgent(t, []string{"--listen", net.JoinHostPort(b.Addr.String(), agentPort)}, "ip", "netns", "exec", b.NS)
	wrapA := []string{"ip", "netns", "exec", a.NS}
	target := net.JoinHostPort(b.Addr.String(), agentPort)

	var narrowsBps, iperfBps []float64
	var bestWire float64 // the wire figure of narrows' best round
	// Two rounds, and up to maxRounds while the best rounds disagree: on a
	// shaped link another process on this 2-core machine (CI runs test
	// packages side by side) can only lower a reading, never raise it.
	for round := 1; round <= maxRounds; round++ {
		if round > rounds && agree(narrowsBps, iperfBps) && slices.Max(narrowsBps)/linkRate >= minGoodShare {
			break
		}
		// narrows
		res := itest.RunWrapped(t, clientLimit, nil, wrapA,
			"net", "stream", "--to", target, "--duration", strconv.Itoa(runSeconds)+"s", "--block", blockSize, "--json")
		if res.Code != 0 {
			t.Fatalf("round %d: narrows net stream exited %d\nstdout:\n%s\nstderr:\n%s\nagent log:\n%s", round, res.Code, res.Stdout, res.Stderr, agent.Log())
		}
		payload, wire := checkNarrows(t, round, res.Stdout)
		narrowsBps = append(narrowsBps, payload)
		if payload >= slices.Max(narrowsBps) {
			bestWire = wire
		}

		// iperf3
		ip := runIperf3(t, link)
		t.Logf("round %d: iperf3: received %.2f Mbit/s (%d bytes in %.3f s); sent %.2f Mbit/s, %d retransmits; MSS %d",
			round, ip.End.SumReceived.BitsPerSec/1e6, ip.End.SumReceived.Bytes, ip.End.SumReceived.Seconds,
			ip.End.SumSent.BitsPerSec/1e6, ip.End.SumSent.Retransmits, ip.Start.TCPMSSDefault)
		if got := ip.End.SumReceived.BitsPerSec; got <= 0 {
			t.Fatalf("round %d: iperf3 reported no received throughput", round)
		}
		iperfBps = append(iperfBps, ip.End.SumReceived.BitsPerSec)
		t.Logf("round %d: narrows/iperf3 = %.4f", round, narrowsBps[round-1]/iperfBps[round-1])
	}

	n, i := slices.Max(narrowsBps), slices.Max(iperfBps)
	checkRates(t, n, bestWire)
	gap := (n - i) / i
	t.Logf("best: narrows %.2f Mbit/s, iperf3 %.2f Mbit/s, gap %+.2f%% (limit ±%.0f%%); %.4f and %.4f of the tbf rate",
		n/1e6, i/1e6, 100*gap, 100*maxToolGap, n/linkRate, i/linkRate)
	if math.Abs(gap) > maxToolGap {
		t.Errorf("narrows best %.2f Mbit/s differs from iperf3 best %.2f Mbit/s by %+.2f%%, more than ±%.0f%% (narrows %v, iperf3 %v)",
			n/1e6, i/1e6, 100*gap, 100*maxToolGap, mbits(narrowsBps), mbits(iperfBps))
	}
}

// agree reports whether the best rounds of the two tools are within maxToolGap.
func agree(narrows, iperf []float64) bool {
	n, i := slices.Max(narrows), slices.Max(iperf)
	return math.Abs(n-i)/i <= maxToolGap
}

// checkNarrows decodes and checks one narrows summary and returns its
// headline throughput.
func checkNarrows(t *testing.T, round int, stdout string) (payload, wire float64) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	var s streamSummary
	if err := json.Unmarshal([]byte(last), &s); err != nil {
		t.Fatalf("round %d: last line of narrows output is not JSON: %v\n%s", round, err, stdout)
	}
	if s.Type != "summary" || s.Stream == nil || len(s.Stream.Runs) != 1 {
		t.Fatalf("round %d: want a summary with one stream run, got:\n%s", round, last)
	}
	if s.Partial || s.Error != "" {
		t.Errorf("round %d: summary is partial (error %q)", round, s.Error)
	}
	r := s.Stream.Runs[0]
	if r.Phase != "single" || r.Direction != "forward" || r.Streams != 1 {
		t.Errorf("round %d: run is %s/%s with %d streams, want single/forward with 1", round, r.Phase, r.Direction, r.Streams)
	}
	if r.TCP == nil {
		t.Fatalf("round %d: no TCP figures (%s): %s", round, r.TCPUnavailable, last)
	}
	var wireFinding string
	var wireValue float64
	codes := make([]string, 0, len(s.Findings))
	for _, f := range s.Findings {
		codes = append(codes, f.Code)
		if f.Code == "stream.wire_overhead" {
			wireFinding, wireValue = f.Summary, f.Values["wire_throughput_bits_per_second"]
		}
	}
	t.Logf("round %d: narrows: headline %.2f Mbit/s; run %.2f Mbit/s (%d bytes received, %d sent, in %.3f s) = %.4f of the tbf rate; wire %.2f Mbit/s = %.4f of the tbf rate; %d header bytes per %d-byte segment; RTT %.2f ms (min %.3f ms), max cwnd %d, %d retransmits (ratio %.5f); CPU local %.1f%%, remote %.1f%%",
		round, s.Stream.Throughput/1e6, r.Throughput/1e6, r.ReceivedBytes, r.SentBytes, r.Duration, r.Throughput/linkRate,
		r.WireThroughput/1e6, r.WireThroughput/linkRate, r.HeaderBytes, r.TCP.MSS,
		r.TCP.RTT*1e3, r.TCP.MinRTT*1e3, r.TCP.MaxCwnd, r.TCP.Retransmits, r.TCP.RetransRatio, r.CPU.Local, r.CPU.Remote)
	t.Logf("round %d: narrows findings %v; wire_overhead: %q", round, codes, wireFinding)

	if s.Stream.Throughput != r.Throughput {
		t.Errorf("round %d: headline throughput %.0f differs from the single run's %.0f", round, s.Stream.Throughput, r.Throughput)
	}
	if r.TCP.MSS != wantMSS || r.HeaderBytes != wantHeader {
		t.Errorf("round %d: mss_bytes %d, header_bytes_per_segment %d; want %d and %d (MTU 1500, TCP timestamps, Ethernet header)",
			round, r.TCP.MSS, r.HeaderBytes, wantMSS, wantHeader)
	}
	if wireFinding == "" {
		t.Errorf("round %d: no stream.wire_overhead finding among %v", round, codes)
	} else if wireValue != r.WireThroughput {
		t.Errorf("round %d: stream.wire_overhead says %.0f bit/s on the wire, the run %.0f", round, wireValue, r.WireThroughput)
	}
	return s.Stream.Throughput, r.WireThroughput
}

// checkRates checks narrows' best round against the shaped rate: its wire
// figure accounts for the headers tbf counts. Only the best round: a busy
// machine lowers a reading on a shaped link, it never raises one.
func checkRates(t *testing.T, payload, wire float64) {
	t.Helper()
	if lo, hi := linkRate*(1-wireTol), linkRate*(1+wireTol); wire < lo || wire > hi {
		t.Errorf("best round: wire_throughput_bits_per_second %.0f is not within ±%.0f%% of the tbf rate %d (%.0f..%.0f)",
			wire, 100*wireTol, linkRate, lo, hi)
	}
	if share := payload / linkRate; payload >= linkRate || share < minGoodShare || share > maxGoodShare {
		t.Errorf("best round: payload throughput %.0f is %.4f of the tbf rate %d, want below it, within %.2f..%.2f (headers take 66/1514 ≈ 4.4%%)",
			payload, share, linkRate, minGoodShare, maxGoodShare)
	}
}

// runIperf3 runs a one-off iperf3 server in B and one iperf3 client stream
// from A to it, and returns the client's JSON report.
func runIperf3(t *testing.T, link *testbed.Link) iperf3Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientLimit)
	defer cancel()

	srv := link.B.Command(ctx, "iperf3", "-s", "-p", iperf3Port, "-1", "--forceflush")
	var srvOut itest.Buffer
	pr, pw := io.Pipe()
	srv.Stdout, srv.Stderr = pw, pw
	if err := srv.Start(); err != nil {
		t.Fatalf("start iperf3 server: %v", err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait(); pw.Close() }()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			srvOut.WriteString(sc.Text() + "\n")
			if !signalled && strings.Contains(sc.Text(), "Server listening on "+iperf3Port) {
				close(ready)
				signalled = true
			}
		}
		io.Copy(io.Discard, pr) //nolint:errcheck // drain after a too-long line
	}()
	stopServer := func() {
		cancel()
		<-srvDone
	}
	select {
	case <-ready:
	case err := <-srvDone:
		t.Fatalf("iperf3 server exited before listening: %v\n%s", err, srvOut.String())
	case <-time.After(5 * time.Second):
		stopServer()
		t.Fatalf("iperf3 server did not report listening within 5s:\n%s", srvOut.String())
	}

	cli := link.A.Command(ctx, "iperf3", "-c", link.B.Addr.String(), "-p", iperf3Port,
		"-P", "1", "-t", strconv.Itoa(runSeconds), "-l", blockSize, "-J")
	var out, errb bytes.Buffer
	cli.Stdout, cli.Stderr = &out, &errb
	cliErr := cli.Run()

	// The one-off server exits by itself once the test is over.
	select {
	case <-srvDone:
	case <-time.After(5 * time.Second):
		stopServer()
		t.Logf("iperf3 server did not exit after its one test; killed it")
	}

	var r iperf3Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("iperf3 client (%v): output is not JSON: %v\nstdout:\n%s\nstderr:\n%s\nserver:\n%s", cliErr, err, out.String(), errb.String(), srvOut.String())
	}
	if cliErr != nil || r.Error != "" {
		t.Fatalf("iperf3 client failed: %v, %q\nstderr:\n%s\nserver:\n%s", cliErr, r.Error, errb.String(), srvOut.String())
	}
	return r
}

func mbits(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x/1e6)
	}
	return "[" + strings.Join(parts, " ") + "] Mbit/s"
}
