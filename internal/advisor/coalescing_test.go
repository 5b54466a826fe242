package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestCoalescingWords: --try-coalescing's answer for each verdict, with
// the figures, the command that keeps the change, and what was put back.
func TestCoalescingWords(t *testing.T) {
	us := func(n float64) result.Seconds { return result.Seconds(time.Duration(n * float64(time.Microsecond))) }
	tried := func(verdict string) *result.CoalescingTry {
		return &result.CoalescingTry{End: result.EndAgent, Interface: "eth0", Before: map[string]int64{"rx-usecs": 50, "adaptive-rx": 1},
			Set: map[string]int64{"rx-usecs": 0, "adaptive-rx": 0}, Block: result.Seconds(2 * time.Second), Blocks: make([]result.CoalescingBlock, 8),
			AsIs: us(260), Least: us(205), Gain: us(55), Margin: us(4), Verdict: verdict, Restored: true}
	}
	for _, c := range []struct {
		name     string
		t        *result.CoalescingTry
		code     string
		contains []string
	}{
		{"costs", tried(result.CoalescingCosts), "rr.coalescing_costs", []string{"(eth0: rx-usecs 50, adaptive-rx 1) adds 55.0 µs to each round trip",
			"p50 260 µs as it is and 205 µs at its least, a difference of 55.0 µs ± 4.00 µs over 4 pairs of 2.00 s blocks", "5,000-query report waits 0.28 s more",
			"ethtool -C eth0 rx-usecs 0 adaptive-rx off", "put back after each block"}},
		{"free", tried(result.CoalescingFree), "rr.coalescing_free", []string{"adds nothing measurable"}},
		{"unjudged", tried(result.CoalescingUnjudged), "rr.coalescing_unjudged", []string{"cannot be told: the pairs did not decide (round trip p50"}},
		{"changed meanwhile", &result.CoalescingTry{End: result.EndAgent, Interface: "eth0", Verdict: result.CoalescingUnjudged, Restored: true,
			Why: "another program changed eth0's coalescing while the test ran (rx-usecs 50 where 0 was set): the test did not run at its least"},
			"rr.coalescing_unjudged", []string{"cannot be told: another program changed eth0's coalescing", "at its least."}},
		{"not put back", func() *result.CoalescingTry {
			x := tried(result.CoalescingUnjudged)
			x.Restored, x.Why = false, "the agent could not put its coalescing back: EIO"
			return x
		}(), "rr.coalescing_unjudged", []string{"could not be put back", "ethtool -C eth0 rx-usecs 50 adaptive-rx on"}},
		{"refused", &result.CoalescingTry{End: result.EndAgent, Verdict: result.CoalescingNotTried, Restored: true, Why: "the agent refused it: this host's interrupt coalescing: veth-b keeps no interrupt coalescing"},
			"rr.coalescing_not_tried", []string{"did not try: the agent refused it", "Nothing was changed"}},
		{"already least", &result.CoalescingTry{End: result.EndAgent, Interface: "tun-b", Verdict: result.CoalescingLeast, Restored: true}, "rr.coalescing_free",
			[]string{"tun-b already interrupts for each packet", "nothing was changed"}},
		{"a name not to paste", func() *result.CoalescingTry { x := tried(result.CoalescingCosts); x.Interface = "e;rm -rf"; return x }(), "rr.coalescing_costs",
			[]string{"ethtool -C <interface> rx-usecs 0 adaptive-rx off"}},
	} {
		f, ok := coalescing(c.t, 5000)
		if !ok || f.Code != c.code {
			t.Errorf("%s: %v %s, want %s", c.name, ok, f.Code, c.code)
			continue
		}
		for _, s := range c.contains {
			if !strings.Contains(f.Summary+" "+f.Detail, s) {
				t.Errorf("%s: %q not in:\n%s\n%s", c.name, s, f.Summary, f.Detail)
			}
		}
	}
	if _, ok := coalescing(nil, 5000); ok {
		t.Error("a finding without the try")
	}
}
