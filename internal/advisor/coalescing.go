package advisor

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// coalescing is --try-coalescing's answer (net rr's, narrows host's):
// round trips with the agent's receive interrupt coalescing as it is and
// at its least, in pairs; the arithmetic for a report of queries.
func coalescing(t *result.CoalescingTry, queries int64) (result.Finding, bool) {
	if t == nil {
		return result.Finding{}, false
	}
	what := "the agent's receive interrupt coalescing"
	if t.Interface != "" {
		what = fmt.Sprintf("the agent's receive interrupt coalescing (%s: %s)", t.Interface, result.CoalescingWords(t.Before))
	}
	put := " It was put back after each block."
	if !t.Restored {
		put = fmt.Sprintf(" It could not be put back (%s): set it back by hand, as root: %s.", t.Why, ethtoolCommand(t.Interface, t.Before))
	}
	switch t.Verdict {
	case result.CoalescingNotTried:
		return result.Finding{Code: "rr.coalescing_not_tried", Severity: "info",
			Summary: "--try-coalescing did not try: " + t.Why + ".",
			Detail:  "Nothing was changed. Without the try, what the agent's interrupt coalescing adds to a round trip is not known: the NIC's settings are in the agent's facts (ethtool -c on its host)."}, true
	case result.CoalescingLeast:
		return result.Finding{Code: "rr.coalescing_free", Severity: "info",
			Summary: fmt.Sprintf("The agent's interface %s already interrupts for each packet (rx-usecs 0, rx-frames at most 1, adaptive-rx off, as far as its driver keeps them): its receive coalescing adds nothing to a round trip, and nothing was changed.", t.Interface)}, true
	}
	pairs := len(t.Blocks) / 2
	vals := map[string]float64{"as_is_p50_seconds": t.AsIs.D().Seconds(), "least_p50_seconds": t.Least.D().Seconds(),
		"gain_seconds": t.Gain.D().Seconds(), "gain_margin_seconds": t.Margin.D().Seconds(), "pairs": float64(pairs)}
	fig := fmt.Sprintf("round trip p50 %s as it is and %s at its least, a difference of %s ± %s over %s of %s blocks", metric.FormatDuration(t.AsIs.D()),
		metric.FormatDuration(t.Least.D()), metric.FormatDuration(t.Gain.D()), metric.FormatDuration(t.Margin.D()), metric.Plural(int64(pairs), "pair"),
		metric.FormatDuration(t.Block.D()))
	switch t.Verdict {
	case result.CoalescingCosts:
		q := queries
		saved := float64(q) * t.Gain.D().Seconds()
		vals["report_seconds_saved"] = saved
		return result.Finding{Code: "rr.coalescing_costs", Severity: "warning",
			Summary: fmt.Sprintf("Tried: %s adds %s to each round trip (%s): a %s-query report waits %.2f s more for it.%s",
				what, metric.FormatDuration(t.Gain.D()), fig, metric.FormatCount(q), saved, put),
			Detail: fmt.Sprintf("The NIC holds a received packet until its timer (rx-usecs) or its count (rx-frames) is up before it interrupts, and a query's lone packet waits the whole timer. "+
				"To keep it at its least, as root on the agent's host: %s; it lasts until a reboot or a driver reload, so set it where the host's tuning lives (a udev rule, NetworkManager's ethtool settings, a tuned profile). "+
				"It costs CPU: an interrupt for each packet, which a bulk stream (replication, a backup) on that NIC pays too; measure a stream (narrows net stream) after. "+
				"This end's NIC coalesces too: run narrows net rr --try-coalescing from the other host to the agent on this one.", ethtoolCommand(t.Interface, t.Set)),
			Values: vals}, true
	case result.CoalescingFree:
		return result.Finding{Code: "rr.coalescing_free", Severity: "info",
			Summary: fmt.Sprintf("Tried: %s adds nothing measurable to a round trip (%s).%s", what, fig, put),
			Detail:  "The limit on a chatty session's round trips is elsewhere: the wire's time, the hosts' wake-ups (narrows host), a queue on the path.",
			Values:  vals}, true
	}
	why := t.Why
	if why == "" {
		why = "the pairs did not decide"
	}
	if t.AsIs > 0 {
		why += " (" + fig + ")"
	}
	return result.Finding{Code: "rr.coalescing_unjudged", Severity: "info",
		Summary: fmt.Sprintf("Tried: whether %s adds to a round trip cannot be told: %s.%s", what, why, put),
		Detail:  "Run it again on a quieter path or host: a difference smaller than the round trips' own noise is not claimed.",
		Values:  vals}, true
}

// ethtoolCommand is the ethtool command that sets m on dev ("<interface>"
// where dev's name cannot be pasted into a shell as it is).
func ethtoolCommand(dev string, m map[string]int64) string {
	parts := []string{"ethtool -C", pasteDev(dev)}
	for _, f := range result.CoalescingFields {
		v, ok := m[f]
		switch {
		case !ok:
		case f == "adaptive-rx" && v == 0:
			parts = append(parts, f+" off")
		case f == "adaptive-rx":
			parts = append(parts, f+" on")
		default:
			parts = append(parts, fmt.Sprintf("%s %d", f, v))
		}
	}
	return strings.Join(parts, " ")
}
