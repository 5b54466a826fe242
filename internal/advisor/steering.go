package advisor

import (
	"cmp"
	"fmt"
	"math"
	"regexp"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// SteerGain is the steered stream's rate over the single stream's at
// which moving the receive's packet work is called a gain: one 4-second
// stream differs from the next by up to 5% on this project's machines,
// so less is not told from noise.
const SteerGain = 1.10

// steering is --try-rps's answer: the stream with the receiving end's
// protocol work moved off its busiest core, against the single stream.
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
	single, steered := tryRuns(s, result.PhaseSteered)
	put := "The setting was put back."
	if !st.Restored {
		put = fmt.Sprintf("It could not be put back (%s): set %s's rps_cpus back to %s.", cmp.Or(st.Error, "no reason given"), st.Interface, st.Before)
	}
	what := fmt.Sprintf("with %s receive steered off core %d (RPS: %s's %s to CPU %s)", end, st.OffCore, st.Interface,
		metric.Plural(int64(st.Queues), "receive queue"), st.CPUs)
	if !tryFinished(single, steered) {
		return result.Finding{Code: "stream.rps_not_tried", Severity: "info",
			Summary: fmt.Sprintf("--try-rps did not finish: the stream %s did not run to its end. %s", what, put)}, true
	}
	ratio := printedRatio(steered, single)
	vals := map[string]float64{"steered_bits_per_second": steered.Throughput, "single_bits_per_second": single.Throughput,
		"ratio": ratio, "off_core": float64(st.OffCore)}
	if ratio < SteerGain {
		return result.Finding{Code: "stream.rps_no_gain", Severity: "info",
			Summary: fmt.Sprintf("Tried: %s, one stream carried %s, %.2f× the %s before: where the receive's protocol work ran did not hold this stream. %s",
				what, metric.FormatBitRate(steered.Throughput), ratio, metric.FormatBitRate(single.Throughput), put),
			Detail: fmt.Sprintf("A gain under %.1f× is within what one run differs from the next. The limit is elsewhere: the verdict on the single stream says where.", SteerGain),
			Values: vals}, true
	}
	keep := "write that mask to each receive queue's rps_cpus"
	if safeName.MatchString(st.Interface) {
		keep = fmt.Sprintf("for q in /sys/class/net/%s/queues/rx-*/rps_cpus; do echo %s > \"$q\"; done", st.Interface, st.Mask)
	}
	return result.Finding{Code: "stream.rps_helped", Severity: "warning",
		Summary: fmt.Sprintf("Tried: %s, one stream carried %s, %.2f× the %s before: the receive's packet work on core %d held it. %s",
			what, metric.FormatBitRate(steered.Throughput), ratio, metric.FormatBitRate(single.Throughput), st.OffCore, put),
		Detail: fmt.Sprintf("To keep it, as root: %s; it lasts until a reboot, so set it where the host's tuning lives (a udev rule, a tuned profile, the NIC's script). "+
			"With a NIC of several queues, spreading them (RSS, the interrupts' affinity, irqbalance) does the same without the hand-off. "+
			"The steered packets cost another core a little, and each a wake-up of it: measure the database's round trips (narrows net rr) after too.", keep),
		Values: vals}, true
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

// tryRuns are a try's two runs: the first single stream, and the run of
// the try's phase (nil where none ran).
func tryRuns(s *result.Stream, phase string) (single, tried *result.StreamRun) {
	for i := range s.Runs {
		switch r := &s.Runs[i]; {
		case r.Phase == result.PhaseSingle && single == nil:
			single = r
		case r.Phase == phase:
			tried = r
		}
	}
	return single, tried
}

// tryFinished says whether both of a try's runs ran to their end.
func tryFinished(single, tried *result.StreamRun) bool {
	return single != nil && tried != nil && single.Throughput > 0 && tried.Stopped == ""
}

// printedRatio is the tried run's rate over the single stream's as a try
// prints it, to two decimals: a try is judged on it, so "1.10×" is
// never called under 1.1×.
func printedRatio(tried, single *result.StreamRun) float64 {
	return math.Round(100*tried.Throughput/single.Throughput) / 100
}
