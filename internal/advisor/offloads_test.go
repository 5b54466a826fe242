package advisor

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestOffloadsWords: --try-offloads' answer from its pairs' verdict and
// figures, and when nothing was tried, nothing was off, a change was not
// undone, or another program turned one off meanwhile.
func TestOffloadsWords(t *testing.T) {
	single := []result.StreamRun{{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: 3.1e9}}
	helped := gain(result.TryHelped, 3.0, 2.8, 3.2, [2]float64{3.1e9, 9.3e9}, [2]float64{3.1e9, 9.3e9}, [2]float64{3.1e9, 9.3e9})
	tried := func(g *result.TryGain) *result.OffloadTry {
		return &result.OffloadTry{Gain: g, Changes: []result.OffloadChange{
			{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", On: []string{"tso", "gso"}, Restored: true},
			{End: result.EndAgent, Role: result.RoleReceiving, Interface: "ens5", On: []string{"gro"}, Restored: true}}}
	}
	for _, c := range []struct {
		name     string
		s        result.Stream
		code     string
		contains []string
	}{
		{"a gain", result.Stream{Runs: single, Offloads: tried(helped)}, "stream.offloads_helped",
			[]string{"in 3 pairs of runs in turn, one stream with them on carried 9.30 Gbit/s, 3.00× (2.80-3.20) the 3.10 Gbit/s as is",
				"this host's eth0 tso, gso (sending) and the agent's ens5 gro (receiving) turned on", "turned off again after each run with them on",
				"on this host, ethtool -K eth0 tso on gso on; on the agent's host, ethtool -K ens5 gro on"}},
		{"none", result.Stream{Runs: single, Offloads: tried(gain(result.TryNoGain, 1.0, 0.98, 1.02, [2]float64{1e9, 1e9}, [2]float64{1e9, 1e9}, [2]float64{1e9, 1e9}))},
			"stream.offloads_no_gain", []string{"1.00× (0.98-1.02)", "did not hold"}},
		{"not told", result.Stream{Runs: single, Offloads: tried(untoldGain())},
			"stream.offloads_unjudged", []string{"in 8 pairs of runs", "1.12× (1.01-1.24)", "neither clearly", "make the change by hand and compare more runs"}},
		{"ended first", result.Stream{Runs: single, Offloads: tried(endedGain())},
			"stream.offloads_unjudged", []string{"the agent refused a run after 2 pairs", "the try ended before its pairs decided. Run it again."}},
		{"refused", result.Stream{Runs: single, Offloads: &result.OffloadTry{Why: "the agent does not let a test change its settings"}},
			"stream.offloads_not_tried", []string{"did not try: the agent does not let", "Nothing was left changed"}},
		{"all on already", result.Stream{Runs: single, Offloads: &result.OffloadTry{Changes: []result.OffloadChange{
			{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", Restored: true}, {End: result.EndAgent, Role: result.RoleReceiving, Interface: "ens5", Restored: true}}}},
			"stream.offloads_not_tried", []string{"nothing to try", "on at both ends"}},
		// An agent from before --try-offloads runs the stream and says
		// nothing: never "on at both ends".
		{"an agent that did not say, nothing off here", result.Stream{Runs: single, Offloads: &result.OffloadTry{Changes: []result.OffloadChange{
			{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", Restored: true},
			{End: result.EndAgent, Role: result.RoleReceiving, Error: "the agent did not say what it turned on"}}}},
			"stream.offloads_not_tried", []string{"cannot say what it tried: the agent did not say what it turned on (an agent from before --try-offloads"}},
		{"an agent that did not say, this host's on", result.Stream{Runs: single, Offloads: &result.OffloadTry{Gain: helped, Changes: []result.OffloadChange{
			{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", On: []string{"tso", "gso"}, Restored: true},
			{End: result.EndAgent, Role: result.RoleReceiving, Error: "the agent did not say what it turned on"}}}},
			"stream.offloads_helped", []string{"with this host's eth0 tso, gso (sending) turned on (the agent did not say what it turned on): in 3 pairs"}},
		{"cut short", result.Stream{Runs: single, Offloads: tried(&result.TryGain{Verdict: result.TryUnjudged, Why: "a stream of the try did not run to its end"})},
			"stream.offloads_not_tried", []string{"did not finish"}},
		{"saved by a narrows of one pair", result.Stream{Runs: append(slices.Clone(single), result.StreamRun{Phase: result.PhaseOffloads, Throughput: 9e9}), Offloads: tried(nil)},
			"stream.offloads_unjudged", []string{"--try-offloads ran one stream with this host's eth0", "once (a run saved by a narrows before 2026-11-29)"}},
		{"turned off meanwhile", result.Stream{Runs: single, Offloads: func() *result.OffloadTry {
			tr := tried(helped)
			tr.Changes[0].Error = "another program turned eth0's tso off while the test ran: the test did not run with it on"
			return tr
		}()}, "stream.offloads_unjudged", []string{"cannot say what the offloads give: another program turned eth0's tso off", "stop it for the run"}},
	} {
		f, ok := offloads(&c.s)
		expectTry(t, c.name, f, ok, c.code, c.contains)
	}
	// Not turned off again: it says so, and what to turn off.
	tr := tried(helped)
	tr.Changes[1].Restored, tr.Changes[1].Error = false, "turning ens5's gro off again: operation not permitted"
	f, _ := offloads(&result.Stream{Runs: single, Offloads: tr})
	if !strings.Contains(f.Summary, "Not all were put back as they were: the agent's ens5 (turning ens5's gro off again: operation not permitted): turn gro off again") {
		t.Errorf("not turned off again: %s", f.Summary)
	}
	// A name a shell would read otherwise: no name in the command.
	tr = tried(helped)
	tr.Changes[0].Interface = "e;rm"
	f, _ = offloads(&result.Stream{Runs: single, Offloads: tr})
	if strings.Contains(f.Detail, "e;rm") || !strings.Contains(f.Detail, "ethtool -K <interface> tso on gso on") {
		t.Errorf("a command with interface %q: %s", tr.Changes[0].Interface, f.Detail)
	}
	if _, ok := offloads(&result.Stream{Runs: single}); ok {
		t.Error("a finding without --try-offloads")
	}
}

// TestTryHelpedLeavesLinkOut: a single stream the counters call
// link-limited, on a path a try then sped up, is not said link-limited
// (the invariants forbid both: a CI run of TestTryOffloads read a veth's
// stream link-limited with no core full, and the offloads tripled it);
// a try that gained nothing leaves the link's verdict standing.
func TestTryHelpedLeavesLinkOut(t *testing.T) {
	single := run(8.08e9, 81, 40, &result.TCPSummary{RTT: result.Seconds(100 * time.Microsecond), RetransRatio: 0.0005})
	on := single
	on.Phase = result.PhaseOffloads
	for _, c := range []struct {
		name  string
		rate  float64
		has   string
		hasnt string
	}{
		{"helped", 24.2e9, "stream.offloads_helped", "stream.link_limited"},
		{"no gain", 8.2e9, "stream.link_limited", "stream.offloads_helped"},
	} {
		on.Throughput = c.rate
		verdict := result.TryNoGain
		if c.rate > 1.1*single.Throughput {
			verdict = result.TryHelped
		}
		g := gain(verdict, c.rate/single.Throughput, 0.95*c.rate/single.Throughput, 1.05*c.rate/single.Throughput,
			[2]float64{single.Throughput, c.rate}, [2]float64{single.Throughput, c.rate}, [2]float64{single.Throughput, c.rate})
		s := &result.Stream{Runs: []result.StreamRun{single, on}, Offloads: &result.OffloadTry{Gain: g, Changes: []result.OffloadChange{
			{End: result.EndAgent, Role: result.RoleReceiving, Interface: "vb", On: []string{"gro"}, Restored: true}}}}
		got := codes(Advise(&result.Report{Stream: s}))
		if !strings.Contains(got, c.has) || strings.Contains(got, c.hasnt) {
			t.Errorf("%s: %s, want %s and not %s", c.name, got, c.has, c.hasnt)
		}
	}
}
