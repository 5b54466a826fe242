package advisor

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// OffloadsGain is the offloads stream's rate over the single stream's at
// which turning the offloads on is called a gain: as SteerGain, one
// stream differs from the next by up to 5% here.
const OffloadsGain = SteerGain

// offloads is --try-offloads' answer: the stream with the offloads each
// end's part uses turned on, against the single stream.
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
	single, on := tryRuns(s, result.PhaseOffloads)
	var turned, back, keep, unknown []string
	for _, c := range t.Changes {
		end, host := "the agent's", "on the agent's host"
		if c.End == result.EndClient {
			end, host = "this host's", "on this host"
		}
		if len(c.On) > 0 {
			turned = append(turned, fmt.Sprintf("%s %s %s (%s)", end, c.Interface, strings.Join(c.On, ", "), c.Role))
			if !c.Restored {
				back = append(back, fmt.Sprintf("%s %s (%s): turn %s off again", end, c.Interface, cmp.Or(c.Error, "no reason given"), strings.Join(c.On, ", ")))
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
	put := "They were turned off again."
	if len(back) > 0 {
		put = "Not all were put back as they were: " + strings.Join(back, "; ") + "."
	}
	what := "with " + strings.Join(turned, " and ") + " turned on"
	if len(unknown) > 0 {
		what += " (" + strings.Join(unknown, "; ") + ")"
	}
	if !tryFinished(single, on) {
		return result.Finding{Code: "stream.offloads_not_tried", Severity: "info",
			Summary: fmt.Sprintf("--try-offloads did not finish: the stream %s did not run to its end. %s", what, put)}, true
	}
	ratio := printedRatio(on, single)
	vals := map[string]float64{"offloads_bits_per_second": on.Throughput, "single_bits_per_second": single.Throughput, "ratio": ratio}
	if ratio < OffloadsGain {
		return result.Finding{Code: "stream.offloads_no_gain", Severity: "info",
			Summary: fmt.Sprintf("Tried: %s, one stream carried %s, %.2f× the %s before: the offloads being off did not hold this stream. %s",
				what, metric.FormatBitRate(on.Throughput), ratio, metric.FormatBitRate(single.Throughput), put),
			Detail: fmt.Sprintf("A gain under %.1f× is within what one run differs from the next. The limit is elsewhere: the verdict on the single stream says where.", OffloadsGain),
			Values: vals}, true
	}
	return result.Finding{Code: "stream.offloads_helped", Severity: "warning",
		Summary: fmt.Sprintf("Tried: %s, one stream carried %s, %.2f× the %s before: handling every packet at the MTU's size held it. %s",
			what, metric.FormatBitRate(on.Throughput), ratio, metric.FormatBitRate(single.Throughput), put),
		Detail: fmt.Sprintf("To keep them, as root: %s; that lasts until a reboot or the driver's reset, so set it where the host's tuning lives (a udev rule, NetworkManager's ethtool settings, the NIC's script). "+
			"On Windows the same are the adapter's Large Send Offload and Receive Segment Coalescing. "+
			"GRO holds a received segment while it merges the next, microseconds at most: measure the database's round trips (narrows net rr) after too.", strings.Join(keep, "; ")),
		Values: vals}, true
}
