package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestOffloadsWords: --try-offloads' answer from the two runs' rates, at
// the gain's bound, and when nothing was tried, nothing was off, or a
// change was not undone.
func TestOffloadsWords(t *testing.T) {
	runs := func(single, on float64) []result.StreamRun {
		return []result.StreamRun{{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: single},
			{Phase: result.PhaseOffloads, Direction: "forward", Streams: 1, Throughput: on}}
	}
	tried := func() *result.OffloadTry {
		return &result.OffloadTry{Changes: []result.OffloadChange{
			{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", On: []string{"tso", "gso"}, Restored: true},
			{End: result.EndAgent, Role: result.RoleReceiving, Interface: "ens5", On: []string{"gro"}, Restored: true}}}
	}
	for _, c := range []struct {
		name     string
		s        result.Stream
		code     string
		contains []string
	}{
		{"a gain", result.Stream{Runs: runs(3.1e9, 9.3e9), Offloads: tried()}, "stream.offloads_helped",
			[]string{"3.00×", "this host's eth0 tso, gso (sending) and the agent's ens5 gro (receiving) turned on", "turned off again",
				"on this host, ethtool -K eth0 tso on gso on; on the agent's host, ethtool -K ens5 gro on"}},
		{"just under the bound", result.Stream{Runs: runs(1e9, 1.094e9), Offloads: tried()}, "stream.offloads_no_gain", []string{"1.09×", "did not hold"}},
		{"at the bound as printed", result.Stream{Runs: runs(1e9, 1.096e9), Offloads: tried()}, "stream.offloads_helped", []string{"1.10×"}},
		{"refused", result.Stream{Runs: runs(1e9, 0)[:1], Offloads: &result.OffloadTry{Why: "the agent does not let a test change its settings"}},
			"stream.offloads_not_tried", []string{"did not try: the agent does not let", "Nothing was left changed"}},
		{"all on already", result.Stream{Runs: runs(1e9, 1e9), Offloads: &result.OffloadTry{Changes: []result.OffloadChange{
			{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", Restored: true}, {End: result.EndAgent, Role: result.RoleReceiving, Interface: "ens5", Restored: true}}}},
			"stream.offloads_not_tried", []string{"nothing to try", "on at both ends"}},
		// An agent from before --try-offloads runs the stream and says
		// nothing: never "on at both ends".
		{"an agent that did not say, nothing off here", result.Stream{Runs: runs(1e9, 1e9), Offloads: &result.OffloadTry{Changes: []result.OffloadChange{
			{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", Restored: true},
			{End: result.EndAgent, Role: result.RoleReceiving, Error: "the agent did not say what it turned on"}}}},
			"stream.offloads_not_tried", []string{"cannot say what it tried: the agent did not say what it turned on (an agent from before --try-offloads"}},
		{"an agent that did not say, this host's on", result.Stream{Runs: runs(1e9, 2e9), Offloads: &result.OffloadTry{Changes: []result.OffloadChange{
			{End: result.EndClient, Role: result.RoleSending, Interface: "eth0", On: []string{"tso", "gso"}, Restored: true},
			{End: result.EndAgent, Role: result.RoleReceiving, Error: "the agent did not say what it turned on"}}}},
			"stream.offloads_helped", []string{"with this host's eth0 tso, gso (sending) turned on (the agent did not say what it turned on), one stream carried"}},
		{"cut short", result.Stream{Runs: append(runs(1e9, 0)[:1], result.StreamRun{Phase: result.PhaseOffloads, Throughput: 2e9, Stopped: "interrupted"}), Offloads: tried()},
			"stream.offloads_not_tried", []string{"did not finish"}},
	} {
		f, ok := offloads(&c.s)
		expectTry(t, c.name, f, ok, c.code, c.contains)
	}
	// Not turned off again: it says so, and what to turn off.
	tr := tried()
	tr.Changes[1].Restored, tr.Changes[1].Error = false, "turning ens5's gro off again: operation not permitted"
	f, _ := offloads(&result.Stream{Runs: runs(1e9, 1.5e9), Offloads: tr})
	if !strings.Contains(f.Summary, "Not all were put back as they were: the agent's ens5 (turning ens5's gro off again: operation not permitted): turn gro off again") {
		t.Errorf("not turned off again: %s", f.Summary)
	}
	// A name a shell would read otherwise: no name in the command.
	tr = tried()
	tr.Changes[0].Interface = "e;rm"
	f, _ = offloads(&result.Stream{Runs: runs(1e9, 1.5e9), Offloads: tr})
	if strings.Contains(f.Detail, "e;rm") || !strings.Contains(f.Detail, "ethtool -K <interface> tso on gso on") {
		t.Errorf("a command with interface %q: %s", tr.Changes[0].Interface, f.Detail)
	}
	if _, ok := offloads(&result.Stream{Runs: runs(1e9, 0)[:1]}); ok {
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
		s := &result.Stream{Runs: []result.StreamRun{single, on}, Offloads: &result.OffloadTry{Changes: []result.OffloadChange{
			{End: result.EndAgent, Role: result.RoleReceiving, Interface: "vb", On: []string{"gro"}, Restored: true}}}}
		got := codes(Advise(&result.Report{Stream: s}))
		if !strings.Contains(got, c.has) || strings.Contains(got, c.hasnt) {
			t.Errorf("%s: %s, want %s and not %s", c.name, got, c.has, c.hasnt)
		}
	}
}
