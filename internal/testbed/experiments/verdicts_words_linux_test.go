//go:build linux

package experiments

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// Issue 25 §2 defects 1 and 2 as scenarios: a start-up overflow is not
// loss, random loss is loss only where it holds the stream, and a printed
// tuning command only raises a setting and is left out where it is enough.

// startupOnly checks the line's truth and narrows' split of one stream's
// retransmits: the line dropped nothing at random, and every retransmit
// narrows counted fell in the start-up.
func (c *Case) startupOnly(l *testbed.DelayLine, before testbed.DelayLineStats, rep *result.Report) {
	c.T.Helper()
	after := l.Stats()
	random, queue := after.AtoB.DroppedLoss-before.AtoB.DroppedLoss, after.AtoB.DroppedQueue-before.AtoB.DroppedQueue
	c.Expect("the line dropped none at random", random == 0, fmt.Sprintf("%d at random, %d at the full queue", random, queue))
	for _, r := range rep.Stream.Runs {
		if r.Phase != result.PhaseSingle || r.TCP == nil {
			continue
		}
		t := r.TCP
		c.Expect("one stream's retransmits after its start-up in under a quarter of the steady intervals",
			t.SteadyIntervals > 0 && 4*t.SteadyLossIntervals < t.SteadyIntervals,
			fmt.Sprintf("%d retransmits, %d in the start-up to %.1f s; %d of %d steady intervals with any", t.Retransmits, t.StartupRetransmits,
				t.StartupEnd.D().Seconds(), t.SteadyLossIntervals, t.SteadyIntervals))
	}
}

// ccOn sets the congestion control of both hosts of l.
func ccOn(c *Case, l *testbed.DelayLine, cc string) {
	for _, h := range l.Hosts() {
		setCC(c.T, h, cc)
	}
}

var streamWordScenarios = []Scenario{
	{
		Name: "stream/slow-start-reno-30ms", Share: 2,
		Question: "is the line losing packets? (issue 25 defect 2, a sender that backs off at loss)",
		Truth:    "300 Mbit/s, 30 ms, no random loss, the default 50 ms queue; Reno's slow start overflows it once: the only drops are the start-up's, the line is the limit",
		Say:      []string{"stream.link_limited", "stream.parallel_comparison"},
		NotSay:   []string{"stream.loss_limited", "stream.per_stream_limited", "stream.window_limited"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 30 * time.Millisecond, RateBitsPerSecond: 300e6})
			ccOn(c, l, "reno")
			addr := c.Agent(l.B)
			before := l.Stats()
			rep := c.stream(l.A, addr, 8*time.Second, "--streams", "4")
			c.startupOnly(l, before, rep)
		},
	},
	{
		// Not in CI yet: before the agent stamped an interval when it
		// read the counts (694a1fa), the 1-2 s interval after
		// the start-up's losses read 323 and 332 Mbit/s on this 300 Mbit/s
		// line and the rate invariant failed it; after, it passed once.
		// The verdicts held every time.
		Name: "stream/random-loss-bbr-30ms", Share: 2,
		Question: "the line loses 1% of its packets: is loss what limits one stream?",
		Truth:    "300 Mbit/s, 30 ms, 1% random loss each way, BBR at both ends: BBR paces past random loss and one stream still fills the line; 4 streams carry no more",
		Say:      []string{"stream.link_limited", "stream.parallel_comparison"},
		NotSay:   []string{"stream.loss_limited", "stream.window_limited"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 30 * time.Millisecond, RateBitsPerSecond: 300e6, Loss: 0.01})
			ccOn(c, l, "bbr")
			addr := c.Agent(l.B)
			rep := c.stream(l.A, addr, 8*time.Second, "--streams", "4")
			c.Within("one stream / the payload share of the line", rep.Stream.Throughput, payload*300e6, 0.7, 1.02,
				"BBR holds most of the line through 1% loss (0.78-0.93 measured); above 1.02 is faster than the line")
		},
	},
	{
		Name: "stream/random-loss-reno-30ms", CI: true,
		Question: "one stream is slow, four are faster: is it the path's loss?",
		Truth:    "300 Mbit/s, 30 ms, 0.1% random loss each way, Reno at both ends: each stream is held near Mathis's 15 Mbit/s, and four carry about four times one",
		Say:      []string{"stream.loss_limited", "stream.parallel_comparison"},
		NotSay:   []string{"stream.link_limited", "stream.per_stream_limited", "stream.window_limited"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 30 * time.Millisecond, RateBitsPerSecond: 300e6, Loss: 0.001})
			ccOn(c, l, "reno")
			addr := c.Agent(l.B)
			// A loss-held stream loses a packet or so a second: 12 s
			// leaves steady intervals enough to see the loss go on.
			rep := c.stream(l.A, addr, 12*time.Second, "--streams", "4")
			mathis := advisor.Mathis(1448, 30*time.Millisecond, 0.001) * 8
			c.Within("one stream / Mathis et al.'s bound at 0.1% and 30 ms", rep.Stream.Throughput, mathis, 0.7, 3,
				"Reno's rate under random loss is Mathis's bound, more when losses cluster; past 3× narrows would not call it loss")
		},
	},
}

// rmemTuning is the plan's tuning of the replica host's tcp_rmem.
func rmemTuning(rep *result.Report) (result.Tuning, bool) {
	if rep.ReplicaPlan == nil {
		return result.Tuning{}, false
	}
	for _, t := range rep.ReplicaPlan.Window.Tuning {
		if t.Setting == "net.ipv4.tcp_rmem" {
			return t, true
		}
	}
	return result.Tuning{}, false
}

var tuningScenarios = []Scenario{
	{
		Name: "plan/replica-tuning-raise", CI: true,
		Question: "the replica falls behind at the peak: what do I set, and does it help? (issue 25 defect 1)",
		Truth:    "30 ms, 100 Mbit/s, the standby's tcp_rmem \"4096 131072 131072\": one stream is window-bound near 3 MB/s under a 5 MB/s peak; a command that raises only the maximum frees it, and the replica then keeps up",
		// Two plans: before the command (falls behind at the peak) and
		// after it (keeps up); each plan's verdict is held below.
		Say:    []string{"plan.replica_falls_behind_at_peak", "plan.replica_window", "plan.replica_keeps_up"},
		NotSay: []string{"plan.replica_falls_behind", "plan.replica_log_factor"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 30 * time.Millisecond, RateBitsPerSecond: 100e6})
			capRmem(c.T, l.B)
			addr := c.Agent(l.B)
			args := []string{"plan", "replica", "--to", addr, "--stage-duration", "4s", "--streams", "1", "--log-rate", "2MB/s,5MB/s", "--log-factor", "1"}
			rep := c.Narrows(l.A, args...)
			c.Expect("before: window-bound, falls behind at the peak", rep.ReplicaPlan != nil && rep.ReplicaPlan.Stream.LimitedBy == result.LimitWindow &&
				rep.ReplicaPlan.Verdict == result.VerdictFallsBehindAtPeak, fmt.Sprint(rep.ReplicaPlan != nil && rep.ReplicaPlan.Verdict == result.VerdictFallsBehindAtPeak))
			t, ok := rmemTuning(rep)
			c.Expect("a command that raises the replica's tcp_rmem, min and default kept", ok && t.Status == result.TuningRaise &&
				t.Current == "4096 131072 131072" && advisor.CheckTuning(t) == nil, t.Command)
			if !ok || t.Command == "" {
				return
			}
			// Paste it on the standby's host, as the DBA would.
			out, err := l.B.Command(context.Background(), "sh", "-c", t.Command).CombinedOutput()
			c.Expect("the command runs", err == nil, strings.TrimSpace(string(out)))
			again := c.Narrows(l.A, args...)
			t2, _ := rmemTuning(again)
			c.Expect("planned again: enough, and no command", t2.Status == result.TuningEnough && t2.Command == "", t2.Status+" "+t2.Command)
			c.Expect("planned again: the stream is no longer window-bound, and the replica keeps up", again.ReplicaPlan != nil &&
				again.ReplicaPlan.Stream.LimitedBy != result.LimitWindow && again.ReplicaPlan.Verdict == result.VerdictKeepsUp,
				fmt.Sprint(again.ReplicaPlan != nil && again.ReplicaPlan.Verdict == result.VerdictKeepsUp))
		},
	},
	{
		Name: "plan/replica-tuning-enough", CI: true,
		Question: "what do I set for a replica that keeps up?",
		Truth:    "30 ms, 100 Mbit/s, the hosts' own buffers (tcp_rmem maximum 6 MiB): a 5 MB/s peak needs 384 KiB; nothing to set",
		Say:      []string{"plan.replica_keeps_up", "plan.replica_window"},
		NotSay:   []string{"plan.replica_falls_behind", "plan.replica_falls_behind_at_peak"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 30 * time.Millisecond, RateBitsPerSecond: 100e6})
			addr := c.Agent(l.B)
			rep := c.Narrows(l.A, "plan", "replica", "--to", addr, "--stage-duration", "4s", "--streams", "1", "--log-rate", "2MB/s,5MB/s", "--log-factor", "1")
			var cmds []string
			if rep.ReplicaPlan != nil {
				for _, t := range rep.ReplicaPlan.Window.Tuning {
					cmds = append(cmds, t.Status+":"+t.Command)
					c.Expect(t.Setting+" on "+t.Host+": enough, no command", t.Status == result.TuningEnough && t.Command == "", t.Status+" "+t.Command)
				}
			}
			c.Expect("both ends' settings read", len(cmds) == 2, strings.Join(cmds, "; "))
		},
	},
}
