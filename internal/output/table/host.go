package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

// hostSummary writes `narrows host`: each machine's power settings as its
// OS told them, and its wake-up experiment.
func hostSummary(b *strings.Builder, h *result.Host) {
	fmt.Fprintf(b, "%-18s %-10s %14s %14s %18s  %s\n", "host", "verdict", "trip as is", "trip awake", "per wake-up", "kept awake by / settings")
	row := func(name string, s *result.HostSide) {
		if s == nil || s.Wakeup == nil {
			return
		}
		w := s.Wakeup
		asis, awake, per := "-", "-", "-"
		if w.AsIs > 0 {
			asis, awake = dur(w.AsIs), dur(w.Awake)
			per = fmt.Sprintf("%s ± %s", dur(w.PerWake), dur(w.PerWakeMargin))
		}
		fmt.Fprintf(b, "%-18s %-10s %14s %14s %18s  %s\n", name, w.Verdict, asis, awake, per, powerWords(w, s.Power))
	}
	row("this host", h.Here)
	if db := h.Database; db != nil {
		where := "on another host: this host's share"
		if db.Local {
			where = "on this host: both ends"
		}
		per := ""
		if w := h.Here.Wakeup; w != nil && w.AsIs > 0 {
			per = fmt.Sprintf(": %s ± %s a query", dur(2*w.PerWake), dur(2*w.PerWakeMargin))
		}
		fmt.Fprintf(b, "%-18s timed on %s's own queries, %s to %s (%s)%s\n", "", db.Engine, db.Query, db.Server, where, per)
	}
	if j := h.Job; j != nil {
		per := ""
		if w := h.Here.Wakeup; w != nil && w.AsIs > 0 {
			per = fmt.Sprintf(": %s ± %s a run", dur(2*w.PerWake), dur(2*w.PerWakeMargin))
		}
		fmt.Fprintf(b, "%-18s timed on the job (%s), run whole: each \"trip\" is one run%s\n", "", j.Program, per)
	}
	if h.SameHost {
		fmt.Fprintf(b, "%-18s the agent is on this host: the same machine, measured once\n", "agent's host")
	} else {
		row("agent's host", h.Agent)
		if h.AgentMissing != "" {
			fmt.Fprintf(b, "%-18s not measured: %s\n", "agent's host", h.AgentMissing)
		}
	}
}

// powerWords are one machine's way of keeping CPUs awake and the settings
// that decide how deeply they sleep.
func powerWords(w *result.Wakeup, p *result.Power) string {
	var parts []string
	if w.How != "" {
		parts = append(parts, w.How)
	}
	if p != nil {
		if p.Hypervisor != "" {
			parts = append(parts, "VM: "+p.Hypervisor)
		}
		if p.IdleDriver != "" {
			parts = append(parts, "cpuidle "+p.IdleDriver)
		}
		if p.FreqGovernor != "" {
			parts = append(parts, "governor "+p.FreqGovernor)
		}
		if v, ok := p.HaltPoll["guest_halt_poll_ns"]; ok {
			parts = append(parts, "guest_halt_poll_ns "+v)
		}
		if p.LatencyRequestMicros != nil && *p.LatencyRequestMicros >= 0 {
			parts = append(parts, fmt.Sprintf("a latency request of %d µs held", *p.LatencyRequestMicros))
		}
		if p.Scheme != "" {
			parts = append(parts, "power plan "+p.Scheme)
		}
	}
	if w.Cannot != "" {
		parts = append(parts, w.Cannot)
	}
	return strings.Join(parts, ", ")
}
