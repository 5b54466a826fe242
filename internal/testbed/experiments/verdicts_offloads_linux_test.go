//go:build linux

package experiments

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// `net stream --try-offloads`' scenarios: a veth pair, whose driver lets
// tso, gso and gro change as a NIC's does. With every offload off the
// stack makes and takes apart each 1500-byte packet; with both programs
// and the receive's packet work on one core, that core sets the rate.
var offloadScenarios = []Scenario{
	{
		Name: "stream/offloads-off", CI: true, Share: testbed.Slots,
		Question: "one stream is far below this fast link, and its offloads are off: what would turning them on give?",
		Truth: "a veth pair with no rate; both programs run on CPU 0, the receiver's packets are steered to CPU 0 (rps_cpus), the sender's TSO and GSO " +
			"and the receiver's GRO are off: CPU 0 is full, most of it making and taking apart 1500-byte packets; with the offloads on (by hand) " +
			"the same programs move more, as iperf3 pinned the same way does",
		Say: []string{"stream.packet_core_limited", "stream.offloads_helped"},
		NotSay: []string{"stream.link_limited", "stream.cpu_limited", "stream.window_limited", "stream.loss_limited", "stream.host_limited",
			"stream.offloads_no_gain", "stream.offloads_not_tried", "stream.offloads_unjudged"},
		Run: offloadsOff,
	}, {
		Name: "stream/offloads-rate-bound", CI: true, Share: testbed.Slots,
		Question: "one stream runs at this line's rate with its offloads off: would turning them on give more?",
		Truth: "a veth pair shaped to 200 Mbit/s (tbf), the sender's TSO and GSO and the receiver's GRO off: the line's rate holds the stream, " +
			"and the offloads on (tried) change nothing",
		Say:    []string{"stream.link_limited", "stream.offloads_no_gain"},
		NotSay: []string{"stream.packet_core_limited", "stream.cpu_limited", "stream.offloads_helped", "stream.offloads_not_tried", "stream.offloads_unjudged"},
		Run: func(c *Case) {
			ln := offloadsOffLine(c)
			addr := c.Agent(ln.B, "--allow-try")
			rep := c.stream(ln.A, addr, 4*time.Second, "--try-offloads")
			triedBoth(c, ln, rep.Stream.Offloads)
			c.Within("throughput / payload share of the line", rep.Stream.Throughput, payload*200e6, 0.85, 1.02,
				"slow start costs the first round trips; above 1.02 would be faster than the line")
		},
	}, {
		Name: "stream/offloads-not-allowed", CI: true,
		Question: "one stream with its offloads off: would turning them on give more? (an agent that does not allow a change)",
		Truth:    "as stream/offloads-rate-bound, the agent started without --allow-try: nothing may be changed at its end, so nothing is tried at either end",
		Say:      []string{"stream.offloads_not_tried"},
		NotSay:   []string{"stream.offloads_helped", "stream.offloads_no_gain", "stream.offloads_unjudged"},
		Run: func(c *Case) {
			ln := offloadsOffLine(c)
			addr := c.Agent(ln.B)
			rep := c.stream(ln.A, addr, 2*time.Second, "--try-offloads")
			t := rep.Stream.Offloads
			c.Expect("says the agent does not allow it; both ends' offloads still off", t != nil && strings.Contains(t.Why, "--allow-try") && len(t.Changes) == 0 &&
				offloadsOf(c, ln.A) == allOff && offloadsOf(c, ln.B) == allOff, fmt.Sprintf("%+v; %s; %s", t, offloadsOf(c, ln.A), offloadsOf(c, ln.B)))
		},
	}, {
		Name: "stream/offloads-on", CI: true,
		Question: "one stream with its offloads on as a NIC's driver has them: would turning them on give more?",
		Truth:    "a veth pair shaped to 200 Mbit/s, the sender's TSO and GSO on (as a veth comes) and GRO turned on at both ends: there is nothing to try",
		Say:      []string{"stream.offloads_not_tried"},
		NotSay:   []string{"stream.offloads_helped", "stream.offloads_no_gain", "stream.offloads_unjudged"},
		Run: func(c *Case) {
			ln := c.Link(testbed.LinkOptions{RateBitsPerSecond: 200e6})
			for _, h := range []*testbed.Host{ln.A, ln.B} {
				if err := h.SetOffloads(true, "gro"); err != nil {
					c.T.Fatal(err)
				}
			}
			addr := c.Agent(ln.B, "--allow-try")
			rep := c.stream(ln.A, addr, 2*time.Second, "--try-offloads")
			t := rep.Stream.Offloads
			c.Expect("nothing turned on at either end, and all still on", t != nil && t.Why == "" && len(t.Changes) == 2 && !t.Changed() &&
				offloadsOf(c, ln.A) == allOn && offloadsOf(c, ln.B) == allOn, fmt.Sprintf("%+v; %s; %s", t, offloadsOf(c, ln.A), offloadsOf(c, ln.B)))
		},
	},
	{
		Name: "stream/offloads-reapplied", CI: true,
		Question: "one stream with its offloads off: would turning them on give more? (a host whose tuning turns them off again)",
		Truth: "as stream/offloads-rate-bound, with a loop on this host turning its TSO off every 50 ms, as a tuning daemon re-applying its profile does: " +
			"the run with the offloads on did not run with them on, and nothing can be told",
		Say:    []string{"stream.offloads_unjudged"},
		NotSay: []string{"stream.offloads_helped", "stream.offloads_no_gain", "stream.offloads_not_tried"},
		Run: func(c *Case) {
			ln := offloadsOffLine(c)
			reapply(c, ln.A, "ethtool -K "+ln.A.Dev+" tso off 2>/dev/null")
			addr := c.Agent(ln.B, "--allow-try")
			rep := c.stream(ln.A, addr, 2*time.Second, "--try-offloads")
			t := rep.Stream.Offloads
			ok := t != nil && len(t.Changes) == 2 && t.Gain != nil && len(t.Gain.Pairs) == 1
			if ok {
				a := t.Changes[0]
				ok = a.Restored && strings.Contains(a.Error, "another program turned "+ln.A.Dev+"'s tso off while the test ran")
			}
			c.Expect("says another program turned the sender's tso off while the test ran, and stopped after that run; all off at both ends after",
				ok && offloadsOf(c, ln.A) == allOff && offloadsOf(c, ln.B) == allOff, fmt.Sprintf("%+v; %s; %s", t, offloadsOf(c, ln.A), offloadsOf(c, ln.B)))
		},
	},
}

const (
	allOff = "tso off, gso off, gro off"
	allOn  = "tso on, gso on, gro on"
)

// offloadsOf is h's device's tso, gso and gro now (testbed.Host.Offloads).
func offloadsOf(c *Case, h *testbed.Host) string {
	c.T.Helper()
	s, err := h.Offloads()
	if err != nil {
		c.T.Fatal(err)
	}
	return s
}

// offloadsOffLine is a veth pair shaped to 200 Mbit/s (tbf), tso, gso
// and gro off at both ends: the line, not the offloads, sets the rate.
func offloadsOffLine(c *Case) *testbed.Link {
	c.T.Helper()
	ln := c.Link(testbed.LinkOptions{RateBitsPerSecond: 200e6})
	offloadsAllOff(c, ln)
	return ln
}

// offloadsAllOff turns tso, gso and gro off at both ends of ln.
func offloadsAllOff(c *Case, ln *testbed.Link) {
	c.T.Helper()
	for _, h := range []*testbed.Host{ln.A, ln.B} {
		if err := h.SetOffloads(false, "tso", "gso", "gro"); err != nil {
			c.T.Fatal(err)
		}
	}
}

// triedBoth: --try-offloads turned on this host's tso and gso (it
// sends) and the agent's gro (it receives), and turned them off again,
// as its report says and ethtool shows.
func triedBoth(c *Case, ln *testbed.Link, t *result.OffloadTry) {
	c.T.Helper()
	ok := t != nil && t.Why == "" && len(t.Changes) == 2
	if ok {
		a, b := t.Changes[0], t.Changes[1]
		ok = a.End == result.EndClient && a.Interface == ln.A.Dev && slices.Equal(a.On, []string{"tso", "gso"}) && a.Restored && a.Error == "" &&
			b.End == result.EndAgent && b.Interface == ln.B.Dev && slices.Equal(b.On, []string{"gro"}) && b.Restored && b.Error == ""
	}
	c.Expect("it turned on "+ln.A.Dev+"'s tso and gso and "+ln.B.Dev+"'s gro, and off again", ok && offloadsOf(c, ln.A) == allOff && offloadsOf(c, ln.B) == allOff,
		fmt.Sprintf("%+v; now %s; %s", t, offloadsOf(c, ln.A), offloadsOf(c, ln.B)))
}

// offloadsOff runs stream/offloads-off: narrows' try, iperf3 pinned the
// same way with the offloads off and on, then the try against narrows'
// own plain stream with the offloads turned on by hand (tryAgainstHand).
func offloadsOff(c *Case) {
	if runtime.NumCPU() < 2 {
		c.Excuse("stream.packet_core_limited", "one CPU: the programs and the receive share it whatever the test does")
		return
	}
	ln := c.Link(testbed.LinkOptions{})
	offloadsAllOff(c, ln)
	steer(c, ln.B, 0)
	addr := agentAt(ln.B)
	itest.StartAgent(c.T, []string{"--listen", addr, "--allow-try"}, append(inNS(ln.B), "taskset", "-c", "0")...)
	try := []string{"net", "stream", "--to", addr, "--duration", "5s", "--json", "--try-offloads"}
	setAll := func(on bool) {
		for _, h := range []*testbed.Host{ln.A, ln.B} {
			names := []string{"tso", "gso"}
			if h == ln.B {
				names = []string{"gro"}
			}
			if err := h.SetOffloads(on, names...); err != nil {
				c.T.Fatal(err)
			}
		}
	}
	rep := pinnedStream(c, ln, try)
	triedBoth(c, ln, rep.Stream.Offloads)
	short := []string{"net", "stream", "--to", addr, "--duration", "2s", "--json"}
	m := inTurn(peerRounds, func() float64 {
		return pinnedStream(c, ln, short).Stream.Throughput
	}, func() float64 {
		return pinnedIperf3(c, ln)
	}, func() float64 {
		setAll(true)
		defer setAll(false)
		return pinnedIperf3(c, ln)
	})
	nOff, ipOff, ipOn := m[0], m[1], m[2]
	plain, byHand, tried, order := tryAgainstHand(c, func() float64 {
		setAll(true)
		defer setAll(false)
		return pinnedStream(c, ln, short).Stream.Throughput
	}, func() *result.TryGain {
		r := pinnedStream(c, ln, slices.Concat(short, []string{"--try-offloads"}))
		if r.Stream.Offloads == nil {
			return nil
		}
		return r.Stream.Offloads.Gain
	})
	c.T.Logf("narrows pinned to CPU 0: %.2f Gbit/s with the offloads off in turn with iperf3, %.2f in its first run, %.2f in the tries' runs as is; with them on, %.2f by --try-offloads, %.2f by hand (mean of %d); "+
		"tried/as is by pair and by hand in order: %s; iperf3 pinned the same (means of %d): %.2f off, %.2f on", nOff/1e9, rep.Stream.Throughput/1e9, plain/1e9, tried/1e9, byHand/1e9, handRuns, order, peerRounds, ipOff/1e9, ipOn/1e9)
	c.Within("narrows' rate / iperf3's, pinned and steered the same, the offloads off, in turn", nOff, ipOff, 0.8, 1.25,
		"the core sets the rate for any program moving one stream so")
	c.Within("iperf3 with the offloads on / off", ipOn, ipOff, 1.1, 100,
		"making and taking apart every 1500-byte packet on CPU 0 held the stream: with the offloads on, the same stream runs faster")
	c.Within("narrows' stream with the offloads on by --try-offloads / on by hand", tried, byHand, 0.85, 1.15,
		"the rate with the cause removed, as --try-offloads measured it, is the rate with it removed by hand (issue 28's 15%)")
}
