package advisor

import (
	"cmp"
	"fmt"
	"regexp"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// SteerGain is the steered streams' rate over the streams' as is at
// which moving the receive's packet work is called a gain (told from
// noise by pairs of runs in turn: result.TryGain).
const SteerGain = result.TryGainAt

// steering is --try-rps's answer: single streams with the receiving
// end's protocol work moved off its busiest core, against single
// streams as is, in pairs in turn.
func steering(s *result.Stream) (result.Finding, bool) {
	st := s.Steering
	if st == nil {
		return result.Finding{}, false
	}
	end := "the agent's"
	if st.End == result.EndClient {
		end = "this host's"
	}
	if st.Error != "" && st.Interface == "" {
		return result.Finding{Code: "stream.rps_not_tried", Severity: "info",
			Summary: "--try-rps did not try: " + st.Error + ".",
			Detail:  "Nothing was changed. Without the try, what moving the receive's packet work would give is not known."}, true
	}
	put := "The setting was put back after each steered run."
	if !st.Restored {
		put = fmt.Sprintf("It could not be put back (%s): set %s's rps_cpus back to %s.", cmp.Or(st.Error, "no reason given"), st.Interface, st.Before)
	}
	what := fmt.Sprintf("with %s receive steered off core %d (RPS: %s's %s to CPU %s)", end, st.OffCore, st.Interface,
		metric.Plural(int64(st.Queues), "receive queue"), st.CPUs)
	g := st.Gain
	if g == nil && ranPhase(s, result.PhaseSteered) {
		return onePair("stream.rps_unjudged", "--try-rps", what, put), true
	}
	if g == nil || len(g.Pairs) == 0 {
		return result.Finding{Code: "stream.rps_not_tried", Severity: "info",
			Summary: fmt.Sprintf("--try-rps did not finish: no pair of streams, as is and %s, ran to its end. %s", what, put)}, true
	}
	if st.Restored && st.Error != "" {
		return result.Finding{Code: "stream.rps_unjudged", Severity: "info",
			Summary: fmt.Sprintf("--try-rps cannot say what steering gives: %s. %s", st.Error, put),
			Detail: "Something on that host writes the receive steering (irqbalance, a tuning daemon, the NIC's script): stop it for the run, or steer by hand and run narrows net stream again, " +
				"as is and steered, in turn."}, true
	}
	tried, vals := tryFigures(g, "steered")
	vals["off_core"] = float64(st.OffCore)
	switch g.Verdict {
	case result.TryHelped:
		keep := "write that mask to each receive queue's rps_cpus"
		if safeName.MatchString(st.Interface) {
			keep = fmt.Sprintf("for q in /sys/class/net/%s/queues/rx-*/rps_cpus; do echo %s > \"$q\"; done", st.Interface, st.Mask)
		}
		return result.Finding{Code: "stream.rps_helped", Severity: "warning",
			Summary: fmt.Sprintf("Tried %s: %s: the receive's packet work on core %d held it. %s", what, tried, st.OffCore, put),
			Detail: fmt.Sprintf("To keep it, as root: %s; it lasts until a reboot, so set it where the host's tuning lives (a udev rule, a tuned profile, the NIC's script). "+
				"With a NIC of several queues, spreading them (RSS, the interrupts' affinity, irqbalance) does the same without the hand-off. "+
				"The steered packets cost another core a little, and each a wake-up of it: measure the database's round trips (narrows net rr) after too.", keep),
			Values: vals}, true
	case result.TryNoGain:
		return noGain("stream.rps_no_gain", "where the receive's protocol work ran", what, tried, put, vals), true
	}
	return untold("stream.rps_unjudged", "the receive's packet work", what, tried, put, g, vals), true
}

// noGain is a try's answer (code) where its gain is clearly under the
// bound: cause, what it changed, did not hold the stream.
func noGain(code, cause, what, tried, put string, vals map[string]float64) result.Finding {
	return result.Finding{Code: code, Severity: "info",
		Summary: fmt.Sprintf("Tried %s: %s: %s did not hold this stream. %s", what, tried, cause, put),
		Detail:  fmt.Sprintf("The gain's 95%% interval lies under %.1f×. The limit is elsewhere: the verdict on the single stream says where.", result.TryGainAt),
		Values:  vals}
}

// untold is a try's answer (code) where its pairs did not tell whether
// work (what it changed) holds the stream: they ran out, differing as
// much as the gain, or the try ended first (g.Why says why).
func untold(code, work, what, tried, put string, g *result.TryGain, vals map[string]float64) result.Finding {
	detail := fmt.Sprintf("Whether %s holds this stream is not known: the try ended before its pairs decided. Run it again.", work)
	if len(g.Pairs) >= result.MaxTryPairs {
		detail = fmt.Sprintf("Whether %s holds this stream is not known: the runs differed from one another as much as the gain. "+
			"Run it again when the host is quiet; a gain this near %.1f× may stay untold: make the change by hand and compare more runs, as is and changed, in turn.", work, result.TryGainAt)
	}
	return result.Finding{Code: code, Severity: "info", Summary: fmt.Sprintf("Tried %s: %s: %s. %s", what, tried, g.Why, put), Detail: detail, Values: vals}
}

// ranPhase says whether s holds a run of phase that ran to its end.
func ranPhase(s *result.Stream, phase string) bool {
	for _, r := range s.Runs {
		if r.Phase == phase && r.Throughput > 0 && r.Stopped == "" {
			return true
		}
	}
	return false
}

// onePair is the answer (code) of a try (flag) saved by a narrows that ran one
// pair of runs, and judged it: one pair does not tell a gain from noise.
func onePair(code, flag, what, put string) result.Finding {
	return result.Finding{Code: code, Severity: "info",
		Summary: fmt.Sprintf("%s ran one stream %s, once (a run saved by a narrows before 2026-11-29): one pair of runs does not tell a gain from noise. %s", flag, what, put),
		Detail:  "One stream differs from the next by 5-8%: run it again with this narrows, which runs pairs in turn until the gain is told from noise."}
}

// tryFigures are a try's pairs in words ("in 3 pairs of runs in turn,
// one stream steered carried 10.2 Gbit/s, 1.42× (1.35-1.49) the 7.2
// Gbit/s as is") and in a finding's values.
func tryFigures(g *result.TryGain, tried string) (string, map[string]float64) {
	asIs, on := g.Means()
	span := ""
	if g.RatioHigh > 0 {
		span = fmt.Sprintf(" (%.2f-%.2f)", g.RatioLow, g.RatioHigh)
	}
	words := fmt.Sprintf("in %s in turn, one stream %s carried %s, %.2f×%s the %s as is", metric.Plural(int64(len(g.Pairs)), "pair")+" of runs",
		tried, metric.FormatBitRate(on), g.Ratio, span, metric.FormatBitRate(asIs))
	return words, map[string]float64{"tried_bits_per_second": on, "as_is_bits_per_second": asIs, "ratio": g.Ratio,
		"ratio_low": g.RatioLow, "ratio_high": g.RatioHigh, "pairs": float64(len(g.Pairs))}
}

// safeName is an interface name that can be pasted into a shell as is.
var safeName = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,15}$`)

// pasteDev is dev as a command to paste names it: "<interface>" where
// the name cannot be pasted into a shell as it is.
func pasteDev(dev string) string {
	if !safeName.MatchString(dev) {
		return "<interface>"
	}
	return dev
}
