package words

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// PathSummary is a doctor run's path in one line, as a network team reads
// it first (issue 27): both hosts, the round trip, one stream and N
// streams each way, the path MTU each way, what one stream sent again in
// its steady state, and the median round trip idle and under a load. A figure doctor did not
// measure is left out, not guessed; "" when it measured none.
func PathSummary(rep *result.Report) string {
	d := rep.Doctor
	if d == nil {
		return ""
	}
	var parts []string
	step := func(name string) *result.Report {
		for _, s := range d.Steps {
			if s.Name == name && s.Report != nil {
				return s.Report
			}
		}
		return nil
	}
	if r := step("net rr 64 B"); r != nil && r.RR != nil && r.RR.RoundTrips > 0 {
		parts = append(parts, fmt.Sprintf("round trip %s (p50, 64 B)", metric.FormatDuration(r.RR.P50.D())))
	}
	// The streams: forward (this host → agent) from "net stream", reverse
	// from "net stream reverse"; one, then N.
	rates := map[string]map[string]float64{}
	n := 0
	var loss *result.TCPSummary
	for _, name := range []string{"net stream", "net stream reverse"} {
		r := step(name)
		if r == nil || r.Stream == nil {
			continue
		}
		for _, run := range r.Stream.Runs {
			if rates[run.Phase] == nil {
				rates[run.Phase] = map[string]float64{}
			}
			rates[run.Phase][run.Direction] = run.Throughput
			if run.Phase == result.PhaseParallel {
				n = run.Streams
			}
			if run.Phase == result.PhaseSingle && run.Direction == "forward" && run.TCP != nil && run.TCP.SteadyIntervals > 0 {
				loss = run.TCP
			}
		}
	}
	ways := func(by map[string]float64) string {
		var w []string
		for _, dir := range []struct{ key, arrow string }{{"forward", "→"}, {"reverse", "←"}} {
			if v, ok := by[dir.key]; ok {
				w = append(w, metric.FormatBitRate(v)+" "+dir.arrow)
			}
		}
		return strings.Join(w, ", ")
	}
	if w := ways(rates[result.PhaseSingle]); w != "" {
		parts = append(parts, "one stream "+w)
	}
	if w := ways(rates[result.PhaseParallel]); w != "" && n > 0 {
		parts = append(parts, fmt.Sprintf("%d streams %s", n, w))
	}
	if r := step("net mtu"); r != nil && r.MTU != nil {
		var w []string
		for _, dir := range r.MTU.Directions {
			arrow := "→"
			if dir.Direction != result.DirUp {
				arrow = "←"
			}
			if dir.PathMTU > 0 {
				w = append(w, fmt.Sprintf("%d B %s", dir.PathMTU, arrow))
			} else if dir.BlackHole {
				w = append(w, "a black hole "+arrow)
			}
		}
		if len(w) > 0 {
			parts = append(parts, "path MTU "+strings.Join(w, ", "))
		}
	}
	if loss != nil {
		parts = append(parts, fmt.Sprintf("one stream → sent %.2g%% again in its steady state", 100*loss.SteadyRetransRatio))
	}
	if r := step("net rr under load"); r != nil && r.Loaded != nil && r.Loaded.Loaded.RoundTrips > 0 && r.Loaded.Idle.RoundTrips > 0 {
		l := r.Loaded
		idle, loaded := metric.FormatDuration(l.Idle.P50.D()), metric.FormatDuration(l.Loaded.P50.D())
		// The figures without a verdict: whether the rise matters is the
		// advisor's to say (rr.bufferbloat, rr.under_load_ok), in the answers.
		parts = append(parts, fmt.Sprintf("median round trip %s idle, %s under load", idle, loaded))
	}
	if len(parts) == 0 {
		return ""
	}
	here, there := Ends(rep.Target, rep.Facts, rep.AgentFacts)
	return here + " → " + there + ": " + strings.Join(parts, "; ")
}

// Ends names a run's two hosts as a network team knows them: this host's
// and the agent's host names, as their facts give them, else "this host"
// and the agent's address.
func Ends(target string, facts, agentFacts *result.Facts) (here, there string) {
	here, there = "this host", target
	if there == "" {
		there = "the agent"
	}
	if facts != nil && facts.Hostname != "" {
		here = facts.Hostname
	}
	if agentFacts != nil && agentFacts.Hostname != "" {
		there = agentFacts.Hostname
	}
	return here, there
}

// Way is a stream's direction by its hosts, sender first: forward is
// here → there, reverse (the agent sends) there → here.
func Way(direction, here, there string) string {
	if direction == "reverse" {
		return there + " → " + here
	}
	return here + " → " + there
}
