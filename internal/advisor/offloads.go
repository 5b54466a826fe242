package advisor

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

// OffloadsGain is the streams' rate with the offloads on over theirs as
// is at which turning the offloads on is called a gain, as SteerGain.
const OffloadsGain = SteerGain

// offloads is --try-offloads' answer: single streams with the offloads
// each end's part uses turned on, against single streams as is, in
// pairs in turn.
func offloads(s *result.Stream) (result.Finding, bool) {
	t := s.Offloads
	if t == nil {
		return result.Finding{}, false
	}
	if t.Why != "" {
		return result.Finding{Code: "stream.offloads_not_tried", Severity: "info",
			Summary: "--try-offloads did not try: " + t.Why + ".",
			Detail:  "Nothing was left changed. Without the try, what the offloads would give this stream is not known."}, true
	}
	var turned, back, keep, unknown, moved []string
	for _, c := range t.Changes {
		end, host := "the agent's", "on the agent's host"
		if c.End == result.EndClient {
			end, host = "this host's", "on this host"
		}
		if len(c.On) > 0 {
			turned = append(turned, fmt.Sprintf("%s %s %s (%s)", end, c.Interface, strings.Join(c.On, ", "), c.Role))
			if !c.Restored {
				back = append(back, fmt.Sprintf("%s %s (%s): turn %s off again", end, c.Interface, cmp.Or(c.Error, "no reason given"), strings.Join(c.On, ", ")))
			} else if c.Error != "" {
				moved = append(moved, c.Error)
			}
			cmd := "ethtool -K " + pasteDev(c.Interface)
			for _, o := range c.On {
				cmd += " " + o + " on"
			}
			keep = append(keep, host+", "+cmd)
		} else if c.Error != "" {
			// What this end changed is not known (an agent from
			// before --try-offloads answers without saying).
			unknown = append(unknown, strings.TrimSuffix(c.Error, "."))
		}
	}
	if len(turned) == 0 && len(unknown) > 0 {
		return result.Finding{Code: "stream.offloads_not_tried", Severity: "info",
			Summary: "--try-offloads cannot say what it tried: " + strings.Join(unknown, "; ") + " (an agent from before --try-offloads turns nothing on).",
			Detail:  "Nothing was changed at this host. Without the try, what the offloads would give this stream is not known."}, true
	}
	if len(turned) == 0 {
		return result.Finding{Code: "stream.offloads_not_tried", Severity: "info",
			Summary: "--try-offloads had nothing to try: the offloads this stream uses were on at both ends (the sender's tso and gso, the receiver's gro).",
			Detail:  "Nothing was changed."}, true
	}
	put := "They were turned off again after each run with them on."
	if len(back) > 0 {
		put = "Not all were put back as they were: " + strings.Join(back, "; ") + "."
	}
	what := "with " + strings.Join(turned, " and ") + " turned on"
	if len(unknown) > 0 {
		what += " (" + strings.Join(unknown, "; ") + ")"
	}
	g := t.Gain
	if g == nil && ranPhase(s, result.PhaseOffloads) {
		return onePair("stream.offloads_unjudged", "--try-offloads", what, put), true
	}
	if g == nil || len(g.Pairs) == 0 {
		return result.Finding{Code: "stream.offloads_not_tried", Severity: "info",
			Summary: fmt.Sprintf("--try-offloads did not finish: no pair of streams, as is and %s, ran to its end. %s", what, put)}, true
	}
	if len(moved) > 0 {
		return result.Finding{Code: "stream.offloads_unjudged", Severity: "info",
			Summary: fmt.Sprintf("--try-offloads cannot say what the offloads give: %s. %s", strings.Join(moved, "; "), put),
			Detail: "Something on that host sets the offloads (a tuning daemon, NetworkManager, the driver resetting): stop it for the run, or turn them on by hand and run narrows net stream again, " +
				"as is and with them on, in turn."}, true
	}
	tried, vals := tryFigures(g, "with them on")
	switch g.Verdict {
	case result.TryHelped:
		return result.Finding{Code: "stream.offloads_helped", Severity: "warning",
			Summary: fmt.Sprintf("Tried %s: %s: handling every packet at the MTU's size held it. %s", what, tried, put),
			Detail: fmt.Sprintf("To keep them, as root: %s; that lasts until a reboot or the driver's reset, so set it where the host's tuning lives (a udev rule, NetworkManager's ethtool settings, the NIC's script). "+
				"On Windows the same are the adapter's Large Send Offload and Receive Segment Coalescing. "+
				"GRO holds a received segment while it merges the next, microseconds at most: measure the database's round trips (narrows net rr) after too.", strings.Join(keep, "; ")),
			Values: vals}, true
	case result.TryNoGain:
		return noGain("stream.offloads_no_gain", "the offloads being off", what, tried, put, vals), true
	}
	return untold("stream.offloads_unjudged", "the offloads being off", what, tried, put, g, vals), true
}
