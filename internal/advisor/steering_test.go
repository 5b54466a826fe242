package advisor

import (
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// TestSteeringWords: --try-rps's answer from the two runs' rates, at the
// gain's bound, and when nothing was tried or put back.
func TestSteeringWords(t *testing.T) {
	runs := func(single, steered float64) []result.StreamRun {
		return []result.StreamRun{{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: single},
			{Phase: result.PhaseSteered, Direction: "forward", Streams: 1, Throughput: steered}}
	}
	tried := func() *result.Steering {
		return &result.Steering{End: result.EndAgent, Interface: "eth0", Queues: 4, OffCore: 3, CPUs: "0-2", Mask: "00000007", Before: "0", Restored: true}
	}
	for _, c := range []struct {
		name     string
		s        result.Stream
		code     string
		contains []string
	}{
		{"a gain", result.Stream{Runs: runs(7.2e9, 10.2e9), Steering: tried()}, "stream.rps_helped",
			[]string{"core 3", "1.42×", "eth0's 4 receive queues to CPU 0-2", "put back", "for q in /sys/class/net/eth0/queues/rx-*/rps_cpus; do echo 00000007 > \"$q\"; done"}},
		{"just under the bound", result.Stream{Runs: runs(1e9, 1.094e9), Steering: tried()}, "stream.rps_no_gain", []string{"1.09×", "did not hold"}},
		{"at the bound as printed", result.Stream{Runs: runs(1e9, 1.096e9), Steering: tried()}, "stream.rps_helped", []string{"1.10×"}},
		{"slower", result.Stream{Runs: runs(1e9, 0.8e9), Steering: tried()}, "stream.rps_no_gain", []string{"0.80×"}},
		{"refused", result.Stream{Runs: runs(1e9, 0)[:1], Steering: &result.Steering{End: result.EndAgent, Error: "the agent does not let a test change its settings"}},
			"stream.rps_not_tried", []string{"did not try: the agent does not let"}},
		{"cut short", result.Stream{Runs: append(runs(1e9, 0.5e9)[:1], result.StreamRun{Phase: result.PhaseSteered, Throughput: 0.5e9, Stopped: "interrupted"}), Steering: tried()},
			"stream.rps_not_tried", []string{"did not finish"}},
	} {
		f, ok := steering(&c.s)
		expectTry(t, c.name, f, ok, c.code, c.contains)
	}
	// Not put back: it says so, and what to write back.
	st := tried()
	st.Restored, st.Error = false, "putting rps_cpus back: permission denied"
	f, _ := steering(&result.Stream{Runs: runs(1e9, 1.5e9), Steering: st})
	if !strings.Contains(f.Summary, "could not be put back (putting rps_cpus back: permission denied): set eth0's rps_cpus back to 0") {
		t.Errorf("not put back: %s", f.Summary)
	}
	// A name a shell would read otherwise: no command to paste.
	st = tried()
	st.Interface = "e;rm"
	f, _ = steering(&result.Stream{Runs: runs(1e9, 1.5e9), Steering: st})
	if strings.Contains(f.Detail, "for q in") {
		t.Errorf("a command with interface %q: %s", st.Interface, f.Detail)
	}
	if _, ok := steering(&result.Stream{Runs: runs(1e9, 0)[:1]}); ok {
		t.Error("a finding without --try-rps")
	}
}

// expectTry: a try's finding is there, with code, and says each of words
// in its summary or detail.
func expectTry(t *testing.T, name string, f result.Finding, ok bool, code string, words []string) {
	t.Helper()
	if !ok || f.Code != code {
		t.Errorf("%s: %v %s, want %s", name, ok, f.Code, code)
		return
	}
	for _, w := range words {
		if !strings.Contains(f.Summary+" "+f.Detail, w) {
			t.Errorf("%s: %q not in %s %s", name, w, f.Summary, f.Detail)
		}
	}
}
