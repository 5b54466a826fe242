package advisor

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// host turns `narrows host` into findings: what waking idle CPUs adds to
// each round trip at each end, said only where the experiment showed it
// (significant and above the floor), said absent only where it showed
// that, and otherwise "cannot judge", with why.
func host(h *result.Host) []result.Finding {
	if h.Job != nil {
		return hostJob(h)
	}
	sides := []hostSide{{"this host", h.Here}}
	if h.Agent != nil {
		sides = append(sides, hostSide{"the agent's host", h.Agent})
	}
	db := h.Database
	var costs, free, unjudged []hostSide
	var perTrip time.Duration
	for i, sd := range sides {
		if sd.s == nil || sd.s.Wakeup == nil {
			continue
		}
		switch w := sd.s.Wakeup; w.Verdict {
		case result.WakeupCosts:
			costs = append(costs, sd)
			if i == 0 && db != nil && !(db.Local && h.Agent != nil) {
				// The database's query: its whole difference is this
				// host's share (both ends' when the server is here).
				perTrip += 2 * w.PerWake.D()
			} else {
				// A wake-up at this end: the pair's, or, with the server
				// here and the other end the agent's host, the server's
				// (half its queries' difference, both of whose ends
				// were here).
				perTrip += w.PerWake.D()
			}
		case result.WakeupFree:
			free = append(free, sd)
		default:
			unjudged = append(unjudged, sd)
		}
	}
	if h.SameHost && db == nil && len(costs) == 1 {
		// One machine is both ends: a round trip wakes it twice.
		perTrip *= 2
	}
	var out []result.Finding
	if len(costs) > 0 {
		var parts []string
		for _, sd := range costs {
			w := sd.s.Wakeup
			if sd.s == h.Here && db != nil {
				parts = append(parts, fmt.Sprintf("%s %s a query (%s as they are, %s with its CPUs kept awake)",
					sd.name, metric.FormatDuration(2*w.PerWake.D()), metric.FormatDuration(w.AsIs.D()), metric.FormatDuration(w.Awake.D())))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s a wake-up (round trips %s as they are, %s with its CPUs kept awake)",
				sd.name, metric.FormatDuration(w.PerWake.D()), metric.FormatDuration(w.AsIs.D()), metric.FormatDuration(w.Awake.D())))
		}
		ends := "each end's CPU waking once"
		switch {
		case db != nil && db.Local && h.Agent != nil:
			ends = "the server is on this host: a query from the agent's host wakes this host once (half its own queries' difference, both of whose ends were here) and the agent's host once"
		case db != nil && db.Local:
			ends = "the server is on this host: both ends' wake-ups are in its queries' difference"
		case db != nil:
			ends = fmt.Sprintf("the server is at %s: this host's share of each query; the server's host pays its own, which narrows host there (or --to an agent on it) measures%s", db.Server, agentToo(h))
		case h.SameHost:
			ends = "the agent is on this host: its CPUs wake twice"
		case h.Agent == nil:
			ends = "this end's only: no agent was asked"
		}
		how := "two threads answer each other as a database's client and server do, blocking between messages"
		what, per := "each round trip", "A query's round trip pays it at each end whose process waited"
		if db != nil {
			how = fmt.Sprintf("%s's own queries (%s to %s, one after another on one session, sent and read in its protocol by one thread as its C client does)", db.Engine, db.Query, db.Server)
			what, per = fmt.Sprintf("each of %s's queries", db.Engine), "A query pays it at each end whose process waited"
		}
		report := time.Duration(h.Queries) * perTrip
		least := "It is the wake-ups' own cost, with the least work after each: where CPUs wake slowly the work just after a wake-up runs slower too, " +
			"so a client and a server that do more for each query pay more than this (narrows host --dsn times the database's own queries; " +
			"narrows host -- COMMAND, your own job run whole, what keeping the CPUs awake gives it)."
		if db != nil {
			least = "The server's work is in it, the client's is the least a client does: where CPUs wake slowly the work just after a wake-up runs slower too, " +
				"so a client that does more for each answer (a driver, an ORM) pays more than this (narrows host -- COMMAND times your own job, run whole)."
		}
		detail := fmt.Sprintf("Measured by experiment: %s, "+
			"with the CPUs as they are and kept from deep idle, in alternating blocks until the difference was clear: %s. %s "+
			"%s (%s), whatever the network: the cost is the hosts', not the wire's, "+
			"and a faster network does not remove it. %s Keeping idle CPUs awake costs power (and, on a cloud VM, CPU time the provider counts: "+
			"a burstable instance spends its credits); do it on the database's hosts, for the sessions that wait on round trips.",
			how, strings.Join(parts, "; "), least, per, ends, remedies(costs))
		out = append(out, result.Finding{Code: "host.cpu_wakeups", Severity: "warning",
			Summary: fmt.Sprintf("Idle CPUs waking add %s to %s: a %s-query report waits %s more for it.",
				metric.FormatDuration(perTrip), what, metric.FormatCount(h.Queries), metric.FormatSeconds(report.Seconds())),
			Detail: detail,
			Values: map[string]float64{"per_round_trip_seconds": perTrip.Seconds(), "report_seconds": report.Seconds()}})
	}
	agentUnknown := h.AgentMissing != "" && !h.SameHost
	if len(free) > 0 && len(costs) == 0 && len(unjudged) == 0 && !agentUnknown {
		var bounds []string
		what := "a round trip"
		for _, sd := range free {
			w := sd.s.Wakeup
			if sd.s == h.Here && db != nil {
				what = db.Engine + "'s queries"
				bounds = append(bounds, fmt.Sprintf("%s %s ± %s a query", sd.name, metric.FormatDuration(2*w.PerWake.D()), metric.FormatDuration(2*w.PerWakeMargin.D())))
				continue
			}
			bounds = append(bounds, fmt.Sprintf("%s %s ± %s a wake-up", sd.name, metric.FormatDuration(w.PerWake.D()), metric.FormatDuration(w.PerWakeMargin.D())))
		}
		out = append(out, result.Finding{Code: "host.cpu_wakeups_none", Severity: "info",
			Summary: "Idle CPUs waking add nothing measurable to " + what + " here: power settings are not what slows a chatty session.",
			Detail: fmt.Sprintf("With the CPUs kept from deep idle %s were no faster, within the experiment's margin (%s): "+
				"changing the power plan or C-states would not speed the queries.", strings.Replace(what, "a round trip", "the round trips", 1), strings.Join(bounds, "; "))})
	}
	// The summary carries why: a row or a line that shows only summaries
	// (the verdict matrix, a watch) said "cannot judge" with no reason.
	for _, sd := range unjudged {
		why := cmp.Or(sd.s.Wakeup.Cannot, sd.s.Wakeup.Why)
		out = append(out, result.Finding{Code: "host.cpu_wakeups_unjudged", Severity: "info",
			Summary: fmt.Sprintf("Cannot judge what waking idle CPUs costs on %s: %s", sd.name, sentence(why)),
			Detail:  why})
	}
	if agentUnknown {
		out = append(out, result.Finding{Code: "host.cpu_wakeups_unjudged", Severity: "info",
			Summary: "Cannot judge what waking idle CPUs costs on the agent's host: " + sentence(h.AgentMissing),
			Detail:  h.AgentMissing})
	}
	if f, ok := coalescing(h.Coalescing, h.Queries); ok {
		out = append(out, f)
	}
	return out
}

// agentToo is what the agent's side adds to a database's query, said
// after its ends.
func agentToo(h *result.Host) string {
	if h.Agent != nil && h.Agent.Wakeup != nil && h.Agent.Wakeup.Verdict == result.WakeupCosts {
		return "; the agent's host adds one wake-up of its own"
	}
	return ""
}

// hostSide is one end of a host run, named as a finding says it.
type hostSide struct {
	name string // "this host", "the agent's host"
	s    *result.HostSide
}

// remedies are what keeps each costly host's CPUs awake, from what its OS
// told: the request a cpuidle governor honours, the power plan, the
// hypervisor.
func remedies(costs []hostSide) string {
	var out []string
	for _, sd := range costs {
		p, w := sd.s.Power, sd.s.Wakeup
		if p == nil {
			p = &result.Power{}
		}
		var r string
		switch {
		case p.OS == "windows":
			r = fmt.Sprintf("On %s (Windows, power plan %s): the High performance plan (powercfg /setactive SCHEME_MIN) keeps cores out of deep C-states.", sd.name, cmp.Or(p.Scheme, p.SchemeGUID, "not known"))
		case p.IdleDriver != "" && p.IdleDriver != "none":
			by := "holds the CPU latency request that did it here"
			if w.How != result.HowLatencyRequest {
				by = "holds a CPU latency request, which this cpuidle driver honours (the experiment kept the CPUs busy instead: narrows was not root)"
			}
			r = fmt.Sprintf("On %s (cpuidle %s): tuned's latency-performance profile (tuned-adm profile latency-performance) %s; "+
				"a program that holds /dev/cpu_dma_latency open with 0 written does the same while it runs.", sd.name, p.IdleDriver, by)
		default:
			r = fmt.Sprintf("On %s (cpuidle %s): no CPU latency request is honoured here, and the experiment kept its CPUs busy instead; "+
				"only the kernel's idle=poll (boot parameter) does that for every program, at full power.", sd.name, cmp.Or(p.IdleDriver, "not known"))
		}
		if p.Hypervisor != "" && p.Hypervisor != "unknown" {
			r += fmt.Sprintf(" It is a virtual machine (%s): how fast a halted vCPU runs again is the hypervisor's to decide too (KVM's halt polling, Hyper-V's and VMware's latency sensitivity): the platform's team can change it for every guest.", p.Hypervisor)
		} else if p.Hypervisor == "unknown" {
			r += " It is a virtual machine: how fast a halted vCPU runs again is the hypervisor's to decide too."
		}
		out = append(out, r)
	}
	return strings.Join(out, " ")
}

// sentence is why as a summary's last sentence: "no reason given." when
// it is empty, and a full stop where it has none.
func sentence(why string) string {
	why = strings.TrimSpace(why)
	switch {
	case why == "":
		return "no reason given."
	case strings.HasSuffix(why, ".") || strings.HasSuffix(why, "?") || strings.HasSuffix(why, "!"):
		return why
	}
	return why + "."
}

// hostJob is host for the operator's own job: what keeping this host's
// CPUs awake gave the whole job, as timed, its client's and server's work
// after each wake-up included (the pair's figure leaves that out).
func hostJob(h *result.Host) []result.Finding {
	w := h.Here.Wakeup
	if w == nil {
		return nil
	}
	name := h.Job.Program
	runs := 0
	for _, b := range w.Blocks {
		if b.Awake {
			runs++
		}
	}
	switch w.Verdict {
	case result.WakeupCosts:
		gain := 2 * w.PerWake.D()
		share := 0.0
		if w.AsIs > 0 {
			share = gain.Seconds() / w.AsIs.D().Seconds()
		}
		per, vals := "", map[string]float64{"job_seconds": gain.Seconds(), "job_share": share}
		if h.Queries > 0 {
			q := gain / time.Duration(h.Queries)
			per = fmt.Sprintf(": %s a query of its %s", metric.FormatDuration(q), metric.FormatCount(h.Queries))
			vals["per_query_seconds"] = q.Seconds()
		}
		return []result.Finding{{Code: "host.cpu_wakeups", Severity: "warning",
			Summary: fmt.Sprintf("Idle CPUs waking add %s to each run of the job (%s): %s as they are, %s with this host's CPUs kept awake (%.0f%% of its time)%s.",
				metric.FormatDuration(gain), name, metric.FormatDuration(w.AsIs.D()), metric.FormatDuration(w.Awake.D()), 100*share, per),
			Detail: fmt.Sprintf("Measured by experiment: the job itself, run whole %d times each way, with this host's CPUs as they are and kept from deep idle, "+
				"alternating until the difference was clear (± %s a run). Everything the job does on this host is in it: its client's and, on this host, its server's "+
				"work after each wake-up, which runs slower where CPUs wake slowly. A server on another host pays its own wake-ups, which this does not change: "+
				"narrows host there (or --to an agent on it) measures them. %s Keeping idle CPUs awake costs power (and, on a cloud VM, CPU time the provider counts: "+
				"a burstable instance spends its credits); do it on the hosts whose sessions wait on round trips.",
				runs, metric.FormatDuration(2*w.PerWakeMargin.D()), remedies([]hostSide{{"this host", h.Here}})),
			Values: vals}}
	case result.WakeupFree:
		return []result.Finding{{Code: "host.cpu_wakeups_none", Severity: "info",
			Summary: fmt.Sprintf("Idle CPUs waking add nothing measurable to the job (%s) here: power settings are not what slows it.", name),
			Detail: fmt.Sprintf("Run whole %d times each way, the job took %s as this host's CPUs are and %s with them kept from deep idle: %s ± %s a run, "+
				"within the experiment's floor (a tenth of its time): changing the power plan or C-states would not speed it.",
				runs, metric.FormatDuration(w.AsIs.D()), metric.FormatDuration(w.Awake.D()), metric.FormatDuration(2*w.PerWake.D()), metric.FormatDuration(2*w.PerWakeMargin.D()))}}
	}
	why := cmp.Or(w.Cannot, w.Why)
	return []result.Finding{{Code: "host.cpu_wakeups_unjudged", Severity: "info",
		Summary: fmt.Sprintf("Cannot judge what waking idle CPUs costs the job (%s) on this host: %s", name, sentence(why)),
		Detail:  why}}
}
