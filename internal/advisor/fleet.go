package advisor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// FleetLow and FleetHigh: a host whose IOPS in a pattern fell below
// FleetLow of the median host's, or whose p99 rose above FleetHigh times
// the median host's, stands out from a fleet of at least FleetMin hosts
// that ran it; within FleetEven of the median in every pattern, none does.
const (
	FleetLow  = 0.6
	FleetHigh = 3.0
	FleetEven = 0.8
	FleetMin  = 3
)

// hostFailed is fleet.host_failed, fleet disk's and fleet net's: the
// hosts (each "name (why)") of total that gave no figures, or not all.
func hostFailed(failed []string, total int) (result.Finding, bool) {
	if len(failed) == 0 {
		return result.Finding{}, false
	}
	return result.Finding{Code: "fleet.host_failed", Severity: "warning",
		Summary: fmt.Sprintf("%s of %d gave no figures, or not all: %s.", metric.Plural(int64(len(failed)), "host"), total, strings.Join(failed, "; ")),
		Detail:  "The fleet's sums and spread are of the hosts that ran; the others did not stop them."}, true
}

// fleet names the hosts that stood out while all of them worked, or says
// none did, and the hosts that gave no figures.
func fleet(f *result.Fleet) []result.Finding {
	var out []result.Finding
	var failed []string
	for _, h := range f.Hosts {
		if h.Error != "" {
			failed = append(failed, h.Name+" ("+h.Error+")")
		}
	}
	if f, ok := hostFailed(failed, len(f.Hosts)); ok {
		out = append(out, f)
	}
	out = append(out, knees(f)...)
	type odd struct{ host, why string }
	var odds []odd
	judged, even := 0, true
	for i, fp := range f.Patterns {
		if fp.Hosts < FleetMin || fp.MedianIOPS <= 0 {
			continue
		}
		judged++
		for _, h := range f.Hosts {
			if h.Disk == nil || i >= len(h.Disk.Patterns) || h.Disk.Patterns[i].Stopped != "" {
				continue
			}
			p := h.Disk.Patterns[i]
			share := p.IOPS / fp.MedianIOPS
			p99 := 0.0
			if fp.MedianP99 > 0 {
				p99 = float64(p.P99) / float64(fp.MedianP99)
			}
			if share < FleetEven || share > 1/FleetEven {
				even = false
			}
			if share < FleetLow || p99 > FleetHigh {
				odds = append(odds, odd{h.Name, fmt.Sprintf("%s gave %.0f%% of the median host's IOPS at %.1f× its p99 in %s", h.Name, 100*share, p99, fp.Name)})
			}
		}
	}
	if judged == 0 {
		return out
	}
	if len(odds) > 0 {
		var whys, hosts []string
		for _, o := range odds {
			whys = append(whys, o.why)
			if !slices.Contains(hosts, o.host) {
				hosts = append(hosts, o.host)
			}
		}
		if len(whys) > 6 {
			whys = append(whys[:6], fmt.Sprintf("and %d more", len(whys)-6))
		}
		out = append(out, result.Finding{Code: "fleet.outlier", Severity: "warning", Hosts: hosts,
			Summary: fmt.Sprintf("%s stood out while the fleet worked together: %s.", metric.Plural(int64(len(hosts)), "host"), strings.Join(whys, "; ")),
			Detail: "Every host ran the same pattern at the same time, so a host far below the others is that host's: a noisy neighbour on its storage, " +
				"a volume throttled by its tier or its provider's limits, a degraded disk or controller. Run `narrows disk` there alone to tell a neighbour (the figures recover) from the volume (they do not)."})
		return out
	}
	if even {
		out = append(out, result.Finding{Code: "fleet.even", Severity: "info",
			Summary: fmt.Sprintf("No host stood out: every one gave %.0f–%.0f%% of the median host's IOPS in every pattern, all working at once.", 100*FleetEven, 100/FleetEven),
			Detail:  "What the cluster gives one host under its neighbours' load is what each host got."})
	}
	return out
}

// knees says, for a sweep with an objective, what the fleet gives within
// it: each shape's knee (the step with the most IOPS whose merged latency
// held), and the shapes where no step held.
func knees(f *result.Fleet) []result.Finding {
	sw := f.Sweep
	if sw == nil || sw.SLO == nil {
		return nil
	}
	slo := sw.SLO
	var held, missed []string
	for _, c := range sw.Curves {
		judged := 0
		for _, pt := range c.Points {
			if pt.Held != nil {
				judged++
			}
		}
		if judged == 0 {
			continue // no merged latency in any step: nothing to judge
		}
		if c.Knee == nil {
			first := c.Points[0]
			for _, pt := range c.Points {
				if pt.Latency != nil {
					first = pt
					break
				}
			}
			missed = append(missed, fmt.Sprintf("%s: at queue depth %d on each host, the fleet's %s was %s", c.Shape, first.QD, slo.Name, dur(first.Latency.D())))
			continue
		}
		k := c.Points[*c.Knee]
		s := fmt.Sprintf("%s: %s IOPS in total at queue depth %d on each host (%s a host), %s %s", c.Shape, metric.FormatCount(int64(k.IOPS+0.5)), k.QD,
			metric.FormatCount(int64(k.IOPS/float64(max(k.Hosts, 1))+0.5)), slo.Name, dur(k.Latency.D()))
		switch next := nextJudged(c, *c.Knee); {
		case next != nil && !*next.Held:
			s += fmt.Sprintf("; at queue depth %d, %s", next.QD, dur(next.Latency.D()))
		case next == nil && *c.Knee == len(c.Points)-1:
			s += "; held at every depth swept: the knee lies deeper, sweep further"
		case next != nil:
			s += fmt.Sprintf("; queue depth %d held it too, with fewer IOPS", next.QD)
		}
		held = append(held, s)
	}
	var out []result.Finding
	if len(held) > 0 {
		out = append(out, result.Finding{Code: "fleet.knee", Severity: "info",
			Summary: fmt.Sprintf("With all %d hosts working at once, the most the fleet gave within %s ≤ %s: %s.", hostsRan(f), slo.Name, dur(slo.Bound.D()), strings.Join(held, "; ")),
			Detail: "Each step ran every host at that queue depth together; the latency is the fleet's own, from every host's I/Os merged. " +
				"Past the knee, deeper queues only wait longer: size the databases' concurrency (and an offer's IOPS) to the knee, not to the deepest step's IOPS."})
	}
	if len(missed) > 0 {
		out = append(out, result.Finding{Code: "fleet.slo_missed", Severity: "warning",
			Summary: fmt.Sprintf("No step held %s ≤ %s with all %d hosts working at once: %s.", slo.Name, dur(slo.Bound.D()), hostsRan(f), strings.Join(missed, "; ")),
			Detail: "Even the shallowest queue was over the objective, so no concurrency the fleet can run meets it together. " +
				"Run `narrows disk` on one host alone: figures within the objective there put it on the load the hosts share (the array, the network to it, a provider's pool); over it there, on the volumes themselves."})
	}
	return out
}

// nextJudged is the first step after i whose latency was judged.
func nextJudged(c result.FleetCurve, i int) *result.FleetPoint {
	for j := i + 1; j < len(c.Points); j++ {
		if c.Points[j].Held != nil {
			return &c.Points[j]
		}
	}
	return nil
}

// hostsRan is how many hosts gave figures.
func hostsRan(f *result.Fleet) int {
	n := 0
	for _, h := range f.Hosts {
		if h.Disk != nil {
			n++
		}
	}
	return n
}
