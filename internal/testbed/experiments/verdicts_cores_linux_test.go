//go:build linux

package experiments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// The packet work of one stream on one core (issue 28): a veth pair with
// no rate, both ends' programs on CPU 0 and the receiver's packets
// steered there too (rps_cpus), the sender's segmentation offloads off
// (a 1500-byte packet at a time, as a NIC without them sends): CPU 0 has
// no idle time, most of it handling packets, and the stream's rate is
// what that core gives. With the receive steered to CPU 1 instead, a peer
// (iperf3, pinned the same way) carries more: it was CPU 0's packet work
// that held it.
var coreScenarios = []Scenario{
	{
		Name: "stream/packet-core", CI: true, Share: testbed.Slots,
		Question: "one stream is far below this fast link: is it the network?",
		Truth: "a veth pair with no rate; both programs run on CPU 0, the receiver's packets are steered to CPU 0 (rps_cpus), " +
			"and the sender's TSO and GSO are off (one 1500-byte packet at a time): CPU 0 is full, much of it handling packets",
		Say: []string{"stream.packet_core_limited", "stream.rps_helped"},
		NotSay: []string{"stream.link_limited", "stream.cpu_limited", "stream.window_limited", "stream.loss_limited", "stream.host_limited", "stream.per_stream_limited",
			"stream.rps_no_gain", "stream.rps_not_tried", "stream.rps_unjudged"},
		Run: func(c *Case) { packetCore(c, true) },
	}, {
		Name: "stream/packet-core-offloads-on", CI: true, Share: testbed.Slots,
		Question: "one stream is far below this fast link, and the offloads are on: is it the network?",
		Truth: "as stream/packet-core, with the offloads on as a NIC's driver has them (TSO and GSO on the sender, as a veth comes; GRO turned on at the receiver): " +
			"CPU 0 is still full, less of it handling packets, and no offload is off to name; --try-rps is asked of an agent started without --allow-try: nothing is tried",
		Say: []string{"stream.packet_core_limited", "stream.rps_not_tried"},
		NotSay: []string{"stream.link_limited", "stream.cpu_limited", "stream.window_limited", "stream.loss_limited", "stream.host_limited", "stream.per_stream_limited",
			"stream.rps_helped", "stream.rps_no_gain", "stream.rps_unjudged"},
		Run: func(c *Case) { packetCore(c, false) },
	}, {
		Name: "stream/window-beside-packet-core", CI: true, Share: testbed.Slots,
		Question: "a stream run with a small window asked for (--window 4K) while another stream fills a core with packets: which held it?",
		Truth: "a veth pair with no rate; an iperf3 stream pinned to CPU 0 with its receive steered there and TSO and GSO off fills CPU 0 with packet work, " +
			"and narrows' stream, on CPU 0 too, asks a 4 KiB window: its sender waits on that window most of the run, and the window, not the core, set its rate",
		Say:    []string{"stream.window_limited"},
		NotSay: []string{"stream.packet_core_limited", "stream.link_limited", "stream.cpu_limited", "stream.loss_limited", "stream.host_limited", "stream.per_stream_limited"},
		Run:    windowBesideCore,
	}, {
		Name: "stream/busy-core-line", CI: true, Share: testbed.Slots,
		Question: "another program keeps a core busy: is that what holds the stream?",
		Truth: "a veth pair shaped to 200 Mbit/s (tbf); a program spins on CPU 1 the whole run: that core is full, but of user work, " +
			"and the line's rate is the limit; --try-rps moves the agent's receive work off it, and the line still sets the rate",
		Say: []string{"stream.link_limited", "stream.rps_no_gain"},
		NotSay: []string{"stream.packet_core_limited", "stream.cpu_limited", "stream.window_limited", "stream.loss_limited", "stream.rps_helped", "stream.rps_not_tried",
			"stream.rps_unjudged"},
		Run: func(c *Case) {
			if runtime.NumCPU() < 2 {
				c.Excuse("stream.link_limited", "one CPU: a spinner on it would hold everything")
				return
			}
			ln := c.Link(testbed.LinkOptions{RateBitsPerSecond: 200e6})
			spin := exec.Command("taskset", "-c", "1", "sh", "-c", "while :; do :; done")
			if err := itest.StartTied(spin); err != nil {
				c.T.Fatal(err)
			}
			defer func() { spin.Process.Kill(); spin.Wait() }() //nolint:errcheck
			addr := c.Agent(ln.B, "--allow-try")
			rep := c.stream(ln.A, addr, 5*time.Second, "--try-rps")
			r := rep.Stream.Runs[0]
			var busy *result.CoreLoad
			if r.Cores != nil {
				busy = r.Cores.Local
			}
			c.Expect("narrows saw the spinner's core full of user work", busy != nil && busy.Core == 1 && busy.Busy >= 0.97 && busy.User >= 0.9,
				coreLine(busy))
			c.Within("throughput / payload share of the line", rep.Stream.Throughput, payload*200e6, 0.85, 1.02,
				"slow start costs the first round trips; above 1.02 would be faster than the line")
			putBack(c, ln.B, rep.Stream.Steering)
		},
	}, {
		Name: "stream/rps-reapplied", CI: true,
		Question: "does the receive's packet work on one core hold my stream? (a host whose tuning writes the steering back)",
		Truth: "a veth pair shaped to 200 Mbit/s (tbf); a loop on the agent's host writes its receive queue's rps_cpus to every CPU every 50 ms, " +
			"as irqbalance or a tuning daemon re-applying its profile does: the steered run did not run steered, and nothing can be told",
		Say:    []string{"stream.rps_unjudged"},
		NotSay: []string{"stream.rps_helped", "stream.rps_no_gain", "stream.rps_not_tried"},
		Run: func(c *Case) {
			ln := c.Link(testbed.LinkOptions{RateBitsPerSecond: 200e6})
			// Every CPU is never a try's mask: it moves the work off one.
			all := strconv.FormatUint(1<<runtime.NumCPU()-1, 16)
			reapply(c, ln.B, "echo "+all+" > /sys/class/net/"+ln.B.Dev+"/queues/rx-0/rps_cpus")
			addr := c.Agent(ln.B, "--allow-try")
			rep := c.stream(ln.A, addr, 2*time.Second, "--try-rps")
			st := rep.Stream.Steering
			c.Expect("says another program changed the steering while the test ran, and stopped after that run", st != nil && st.Restored &&
				strings.Contains(st.Error, "another program changed "+ln.B.Dev+"'s rps_cpus while the test ran") && st.Gain != nil && len(st.Gain.Pairs) == 1,
				fmt.Sprintf("%+v", st))
		},
	},
}

// packetCore runs one stream across a veth pair with both programs and
// the receive on CPU 0, the sender's TSO and GSO off when offloadsOff:
// narrows must name CPU 0 (and the offloads only when off), and its rate
// must be a peer's pinned the same way. With them off, the receive's
// packet work steered to CPU 1 must carry more (it held the stream);
// with them on it did not (15.3 against 17.8 Gbit/s by hand), and that
// is not asserted.
func packetCore(c *Case, offloadsOff bool) {
	if runtime.NumCPU() < 2 {
		c.Excuse("stream.packet_core_limited", "one CPU: the receive cannot be steered off it")
		return
	}
	ln := c.Link(testbed.LinkOptions{})
	if offloadsOff {
		ethtool(c, ln.A, "-K", ln.A.Dev, "tso", "off", "gso", "off")
	} else {
		// A veth comes with GRO off; a NIC's driver has it on.
		ethtool(c, ln.B, "-K", ln.B.Dev, "gro", "on")
	}
	steer(c, ln.B, 0)
	addr := agentAt(ln.B)
	agentArgs := []string{"--listen", addr}
	if offloadsOff {
		agentArgs = append(agentArgs, "--allow-try")
	}
	itest.StartAgent(c.T, agentArgs, append(inNS(ln.B), "taskset", "-c", "0")...)
	args := []string{"net", "stream", "--to", addr, "--duration", "5s", "--json", "--try-rps"}
	rep := pinnedStream(c, ln, args)
	if r := rep.Stream.Runs[0]; r.Cores != nil {
		c.T.Logf("this end's busiest %s; the agent's %s", coreLine(r.Cores.Local), coreLine(r.Cores.Remote))
	}
	f := finding(rep, "stream.packet_core_limited")
	if f == nil {
		return // the Say list fails the row
	}
	// Both ends are one machine here, so the one core is said once.
	c.Expect("the finding names core 0, at the agent (the receiving end) too", f.Values["core"] == 0 &&
		(strings.Contains(f.Summary, "core 0 at the agent (receiving)") || strings.Contains(f.Summary, "core 0 at this host and at the agent")), f.Summary)
	c.Expect("the finding says the agent's interface is a veth, inside this host", strings.Contains(f.Detail, "At the agent, "+ln.B.Dev+" is a virtual interface inside this host"), f.Detail)
	named := strings.Contains(f.Detail, "this host (sending) has "+ln.A.Dev+": tso, gso off")
	if offloadsOff {
		c.Expect("the finding names the sender's offloads that are off", named, f.Detail)
	} else {
		c.Expect("the finding names no offload off", !strings.Contains(f.Detail, "offloads are off"), f.Detail)
	}
	if !offloadsOff {
		st := rep.Stream.Steering
		c.Expect("nothing was steered: the agent does not allow it", st != nil && st.Interface == "" && strings.Contains(st.Error, "--allow-try") &&
			readRPS(c, ln.B) == "1", fmt.Sprintf("%+v, rps_cpus %s", st, readRPS(c, ln.B)))
		c.Within("narrows' rate / iperf3's, pinned and steered the same", rep.Stream.Throughput, pinnedIperf3(c, ln), 0.8, 1.25,
			"the core sets the rate for any program moving one stream so")
		return
	}
	putBack(c, ln.B, rep.Stream.Steering)
	// The gain, by a peer: iperf3 with the receive on CPU 0 and on CPU 1,
	// in turn with narrows' plain stream on CPU 0.
	short := []string{"net", "stream", "--to", addr, "--duration", "2s", "--json"}
	m := inTurn(peerRounds, func() float64 {
		steer(c, ln.B, 0)
		return pinnedStream(c, ln, short).Stream.Throughput
	}, func() float64 {
		return pinnedIperf3(c, ln)
	}, func() float64 {
		steer(c, ln.B, 1)
		defer steer(c, ln.B, 0)
		return pinnedIperf3(c, ln)
	})
	n0, on0, on1 := m[0], m[1], m[2]
	// The try against narrows' own plain stream with the receive moved to
	// CPU 1 by hand (the cause removed without --try-rps). iperf3 reads
	// 1.01-1.21 of narrows steered in five runs while 0.97-0.99 of it
	// unsteered: with the protocol work off CPU 0 the receiving program's
	// reads share CPU 0 with the sender, and iperf3's 128 KiB reads cost
	// it more there than narrows' batched ones. So the try is held to the
	// same program's rate with the cause removed by hand, and iperf3 to
	// the gain.
	plain, byHand, tries, order := tryAgainstHand(c, func() float64 {
		steer(c, ln.B, 1)
		return pinnedStream(c, ln, short).Stream.Throughput
	}, func() *result.TryGain {
		steer(c, ln.B, 0)
		r := pinnedStream(c, ln, slices.Concat(short, []string{"--try-rps"}))
		if r.Stream.Steering == nil {
			return nil
		}
		return r.Stream.Steering.Gain
	})
	c.T.Logf("narrows on CPU 0: %.2f Gbit/s in turn with iperf3, %.2f in the tries' runs as is; iperf3 pinned to CPU 0: %.2f Gbit/s with the receive steered to CPU 0, %.2f Gbit/s steered to CPU 1 (means of %d); "+
		"narrows steered to CPU 1 by hand %.2f Gbit/s (mean of %d), by --try-rps %.2f (tried/as is by pair: %s)",
		n0/1e9, plain/1e9, on0/1e9, on1/1e9, peerRounds, byHand/1e9, handRuns, tries/1e9, order)
	c.Within("narrows' rate / iperf3's, pinned and steered the same, in turn", n0, on0, 0.8, 1.25,
		"the core sets the rate for any program moving one stream so")
	// The cause, by the peer: where CPU 0's packet work holds iperf3's
	// stream, moved off it the stream runs faster, and the try must find
	// it; where it runs no faster, the try must not say it helped. This
	// project's machines read 1.16-1.58 until 2026-11-28; on 2026-11-29
	// one read 0.98 and 1.14 (idle) and 0.85 (a CI run whose streams ran
	// 1.8-6.1 Gbit/s): its CPU 0 hardly held the stream by its packet
	// work. The try tells a gain from noise by pairs of runs in turn
	// (three to eight), and a gain of 1.1× from one of 1.0× only where
	// the runs allow, so only a peer's gain clear of 1.1× (1.3× or more)
	// is one the try must find; under that it may find none or not tell
	// (rps_unjudged), and at 0.9× or less it must not find one. The
	// row's notes say why a code was not judged.
	if gain := on1 / on0; gain < 1.3 {
		why := fmt.Sprintf("iperf3 carried %.2f× with the receive steered off CPU 0: near the 1.1× a try calls a gain, which its pairs may not tell either way", gain)
		if gain <= 0.9 {
			why = fmt.Sprintf("iperf3 carried %.2f× with the receive steered off CPU 0: its packet work did not hold the stream", gain)
			c.Expect("no try says steering helped: "+why, !c.Said("stream.rps_helped"), strings.Join(c.said["stream.rps_helped"], "; "))
		}
		c.Excuse("stream.rps_helped", why)
		c.Excuse("stream.rps_no_gain", why)
		c.Excuse("stream.rps_unjudged", why)
	}
	c.Within("narrows' steered stream (--try-rps) / narrows' stream with the receive moved to CPU 1 by hand", tries, byHand, 0.85, 1.15,
		"the rate with the cause removed, as --try-rps measured it, is the rate with it removed by hand (issue 28's 15%)")
}

// peerRounds is how many times inTurn runs narrows' plain stream (2 s,
// as its tries' runs) and the peer's (iperf3 -t 4): a rate held to a
// peer's is taken in the same minutes, the runs in turn, as this
// machine's pace moves from one minute to the next (a CI run read
// narrows 0.78 of iperf3's with the offloads off, bound 0.8, where
// narrows' runs came a minute after iperf3's two; in turn, 0.904). With
// narrows' runs in turn made 4 s, as iperf3's, one run read 0.81: not
// explained yet.
const peerRounds = 3

// inTurn runs each of runs in turn, rounds times, and returns each one's
// mean.
func inTurn(rounds int, runs ...func() float64) []float64 {
	m := make([]float64, len(runs))
	for range rounds {
		for i, run := range runs {
			m[i] += run() / float64(rounds)
		}
	}
	return m
}

// handRuns is how many runs with the cause removed by hand
// tryAgainstHand holds the tries' to, in means; tryCount is how many
// tries it runs: each runs pairs in turn, three or more tried runs, so
// two give six or more.
const (
	handRuns = 6
	tryCount = 2
)

// tryAgainstHand runs hand (the cause removed by hand, narrows' plain
// stream) handRuns times and try (narrows' --try-… stream: its runs as
// is and tried, from its judgement, tryGain) tryCount times, 2-second
// runs in the order by hand, by hand, try, by hand, by hand, try, by
// hand, by hand (a machine drifting steadily moves both sides alike),
// and returns their means (bit/s: the tries' runs as is, by hand, the
// tried runs) and the runs in order (Gbit/s).
//
// One run with the cause removed is the noisy figure here, whichever way
// it is removed: back-to-back 2-, 3- and 5-second runs of a steered
// stream vary by 6-8% (one standard deviation; 7.8 to 12 Gbit/s), and
// neighbours are no closer than any two (with the CPUs held awake too:
// 9.6 to 11.7), while a plain run varies by 3%. Means of two held to
// 15% read 0.85-1.17 in twenty fresh clones' runs of stream/packet-core,
// three outside, and 0.91-1.10 in twelve of stream/offloads-off; means
// of six put 15% at 3.3-4.6 standard deviations of their ratio.
func tryAgainstHand(c *Case, hand func() float64, try func() *result.TryGain) (plain, byHand, tries float64, order string) {
	c.T.Helper()
	var runs []string
	var n int
	for i := range handRuns + tryCount {
		if i%3 != 2 {
			r := hand()
			byHand += r / handRuns
			runs = append(runs, fmt.Sprintf("by hand %.2f", r/1e9))
			continue
		}
		g := try()
		if g == nil || len(g.Pairs) == 0 {
			c.Expect("the try ran pairs", false, fmt.Sprintf("%+v", g))
			continue
		}
		var ts []string
		for _, p := range g.Pairs {
			plain += p.AsIs
			tries += p.Tried
			ts = append(ts, fmt.Sprintf("%.2f/%.2f", p.Tried/1e9, p.AsIs/1e9))
			n++
		}
		runs = append(runs, fmt.Sprintf("try %s (%s, %.2f×)", strings.Join(ts, " "), g.Verdict, g.Ratio))
	}
	if n > 0 {
		plain, tries = plain/float64(n), tries/float64(n)
	}
	return plain, byHand, tries, strings.Join(runs, ", ")
}

// pinnedStream is narrows args from ln's A with its programs on CPU 0,
// recorded; a run that writes no stream summary ends the scenario. Its
// time allows a try of eight pairs of 5-second runs after the single
// stream's (about 90 s).
func pinnedStream(c *Case, ln *testbed.Link, args []string) *result.Report {
	c.T.Helper()
	rep, _, _ := c.record(0, args, itest.RunWrapped(c.T, 3*time.Minute, nil, append(inNS(ln.A), "taskset", "-c", "0"), args...))
	if rep == nil || rep.Stream == nil {
		c.T.Fatalf("%s wrote no stream summary", strings.Join(args, " "))
	}
	return rep
}

// readRPS is h's receive queue's rps_cpus, without leading zeros.
func readRPS(c *Case, h *testbed.Host) string {
	c.T.Helper()
	out, err := h.Command(context.Background(), "cat", "/sys/class/net/"+h.Dev+"/queues/rx-0/rps_cpus").Output()
	if err != nil {
		c.T.Fatalf("rps_cpus: %v", err)
	}
	v := strings.TrimLeft(strings.TrimSpace(string(out)), "0,")
	if v == "" {
		v = "0"
	}
	return v
}

// putBack: --try-rps steered h's receive for one run and put it back, as
// its report says and the file shows.
func putBack(c *Case, h *testbed.Host, st *result.Steering) {
	c.T.Helper()
	if st == nil {
		c.Expect("--try-rps said what it changed", false, "no steering in the report")
		return
	}
	want := strings.TrimLeft(st.Before, "0,")
	if want == "" {
		want = "0"
	}
	got := readRPS(c, h)
	c.Expect("the agent steered "+h.Dev+" and put it back", st.Interface == h.Dev && st.Restored && st.Error == "" && got == want,
		fmt.Sprintf("%+v; rps_cpus now %s", *st, got))
}

// windowBesideCore runs a 4 KiB window's stream beside a stream that
// fills CPU 0 with packet work: the full core is there at an end, and the
// verdict must be the window asked for (CI's fresh clone once called such
// a stream core-limited, from other tests' packets on its core).
func windowBesideCore(c *Case) {
	if runtime.NumCPU() < 2 {
		c.Excuse("stream.window_limited", "one CPU: the receive cannot be steered")
		return
	}
	ln := c.Link(testbed.LinkOptions{})
	ethtool(c, ln.A, "-K", ln.A.Dev, "tso", "off", "gso", "off")
	steer(c, ln.B, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := ln.B.Command(ctx, "taskset", "-c", "0", "iperf3", "-s", "-1", "-p", "5203")
	if err := itest.StartTied(srv); err != nil {
		c.T.Fatal(err)
	}
	defer srv.Wait() //nolint:errcheck
	load := make(chan []byte, 1)
	go func() {
		out, _ := iperf3Client(ctx, ln.A, "taskset", "-c", "0", "iperf3", "-c", ln.B.Addr.String(), "-p", "5203", "-t", "9", "-J")
		load <- out
	}()
	addr := agentAt(ln.B)
	itest.StartAgent(c.T, []string{"--listen", addr}, append(inNS(ln.B), "taskset", "-c", "0")...)
	time.Sleep(time.Second) // the load's slow start over
	args := []string{"net", "stream", "--to", addr, "--duration", "4s", "--window", "4K", "--json"}
	rep, _, _ := c.record(0, args, itest.RunWrapped(c.T, time.Minute, nil, append(inNS(ln.A), "taskset", "-c", "0"), args...))
	bps, err := iperf3Received(<-load)
	if err != nil {
		c.T.Fatalf("the loading iperf3: %v", err)
	}
	if rep == nil || rep.Stream == nil {
		c.T.Fatal("net stream wrote no stream summary")
	}
	r := rep.Stream.Runs[0]
	var full []string
	if cs := r.Cores; cs != nil {
		for _, l := range []*result.CoreLoad{cs.Local, cs.Remote} {
			if advisor.PacketCoreFull(l) {
				full = append(full, coreLine(l))
			}
		}
	}
	c.T.Logf("the loading iperf3 carried %.2f Gbit/s; narrows' stream %.3f Gbit/s", bps/1e9, r.Throughput/1e9)
	c.Expect("a core full of packet work at an end (the load's), beside the window asked for", len(full) > 0, strings.Join(full, "; "))
	stall := 0.0
	if r.TCP != nil {
		stall = max(r.TCP.RwndLimited, r.TCP.SndbufLimited)
	}
	c.Expect("the sender waited on the 4 KiB window half the run or more", stall >= advisor.WindowBound, fmt.Sprintf("%.2f of its busy time", stall))
}

// ethtool runs ethtool in h's namespace.
func ethtool(c *Case, h *testbed.Host, args ...string) {
	c.T.Helper()
	if _, err := h.Ethtool(args...); err != nil {
		c.T.Fatal(err)
	}
}

// steer sends the packets h receives to cpu for their protocol work
// (RPS): its device's one receive queue's rps_cpus.
func steer(c *Case, h *testbed.Host, cpu int) {
	c.T.Helper()
	file := "/sys/class/net/" + h.Dev + "/queues/rx-0/rps_cpus"
	mask := strconv.FormatUint(1<<cpu, 16)
	if out, err := h.Command(context.Background(), "sh", "-c", `echo "$1" > "$2"`, "sh", mask, file).CombinedOutput(); err != nil {
		c.T.Fatalf("rps_cpus %s: %v: %s", mask, err, out)
	}
}

// pinnedIperf3 is one 4-second iperf3 stream from A to B with both ends
// on CPU 0, in bits a second received.
func pinnedIperf3(c *Case, ln *testbed.Link) float64 {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := ln.B.Command(ctx, "taskset", "-c", "0", "iperf3", "-s", "-1", "-p", "5202")
	if err := itest.StartTied(srv); err != nil {
		c.T.Fatal(err)
	}
	defer srv.Wait() //nolint:errcheck
	out, err := iperf3Client(ctx, ln.A, "taskset", "-c", "0", "iperf3", "-c", ln.B.Addr.String(), "-p", "5202", "-t", "4", "-J")
	bps, jerr := iperf3Received(out)
	if err != nil || jerr != nil {
		srv.Process.Kill() //nolint:errcheck
		c.T.Fatalf("iperf3: %v", errors.Join(err, jerr))
	}
	return bps
}

// iperf3Client runs argv (an iperf3 -c, perhaps wrapped) on h until its
// server listens (five seconds at most): iperf3 -J says "unable to
// connect" in its report, and may exit 0 all the same.
func iperf3Client(ctx context.Context, h *testbed.Host, argv ...string) ([]byte, error) {
	var out []byte
	var err error
	for range 50 {
		out, err = h.Command(ctx, argv[0], argv[1:]...).Output()
		if !strings.Contains(string(out), "unable to connect") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out, err
}

// iperf3Received is the receiver's rate in iperf3 -J's report, or the
// error the report gives (iperf3 may exit 0 with one).
func iperf3Received(out []byte) (float64, error) {
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, fmt.Errorf("iperf3 -J: %w", err)
	}
	if r.Error != "" || r.End.SumReceived.BitsPerSecond <= 0 {
		return 0, fmt.Errorf("iperf3: %q", r.Error)
	}
	return r.End.SumReceived.BitsPerSecond, nil
}

// coreLine is a core's load in a line of the matrix.
func coreLine(l *result.CoreLoad) string {
	if l == nil {
		return "no core read"
	}
	return fmt.Sprintf("core %d of %d: busy %.2f, user %.2f, system %.2f, softirq %.2f", l.Core, l.Cores, l.Busy, l.User, l.System, l.SoftIRQ)
}
