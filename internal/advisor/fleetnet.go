package advisor

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// FleetNetLow: a replica that received its streams at under this share
// of the median replica's rate stands out (fleet.outlier's 60%).
// FleetNetFull: a link whose streams used this share of its rate on the
// wire was full (a NIC carries a little less than its speed in headers
// the host counts: preamble and gaps). FleetNetMin: the replicas it
// takes to judge the spread: two, an availability group's usual
// secondaries (one under 60% of the two's median is under 43% of the
// other).
const (
	FleetNetLow  = 0.6
	FleetNetFull = 0.9
	FleetNetMin  = 2
)

// fleetNet says which replica's path is the weak one, or that none is,
// whether this host's link was the limit, and which hosts gave no
// figures. A replica far below the others is pinned on its path only
// where this host's link is known to have had room: its rate known and
// not reached. Otherwise it is named, and what cannot be told is said.
func fleetNet(f *result.FleetNet) []result.Finding {
	var out []result.Finding
	var failed []string
	for _, h := range f.Hosts {
		if h.Error != "" {
			failed = append(failed, h.Name+" ("+h.Error+")")
		}
	}
	if x, ok := hostFailed(failed, len(f.Hosts)); ok {
		out = append(out, x)
	}
	full := map[string]bool{}
	for _, l := range f.Links {
		if l.Rate > 0 && l.WireThroughput >= FleetNetFull*l.Rate {
			full[l.Interface] = true
			out = append(out, nicLimited(f, l))
		}
	}
	t := f.Total
	if t.Hosts < FleetNetMin || t.MedianHost <= 0 {
		return out
	}
	var weak, slow []result.FleetNetHost
	even := true
	for _, h := range f.Hosts {
		if !h.Counted() {
			continue
		}
		if h.Share < FleetEven || h.Share > 1/FleetEven {
			even = false
		}
		if h.Share >= FleetNetLow {
			continue
		}
		if l := linkOf(f, h.Interface); l.Rate > 0 && !full[l.Interface] {
			weak = append(weak, h)
		} else {
			slow = append(slow, h)
		}
	}
	log := "the log"
	if f.Config.StreamsPerHost > 1 {
		log = fmt.Sprintf("its %d databases' logs", f.Config.StreamsPerHost)
	}
	if len(weak) > 0 {
		var links []string
		seen := map[string]bool{}
		for _, h := range weak {
			if l := linkOf(f, h.Interface); !seen[l.Interface] {
				seen[l.Interface] = true
				links = append(links, fmt.Sprintf("%s carried %.0f%% of its %s%s", linkName(l), 100*l.Share, metric.FormatBitRate(l.Rate), rateFrom(l)))
			}
		}
		subject, verb := "its path, not this host's NIC, is the weak one", "received "+log+" at "
		if len(weak) > 1 {
			subject = "their paths, not this host's NIC, are the weak ones"
		}
		out = append(out, result.Finding{Code: "fleetnet.weak_path", Severity: "warning", Hosts: hostNames(weak),
			Summary: fmt.Sprintf("%s, while this host shipped to every replica at once: %s; this host's link had room (%s).",
				replicasBelow(weak, t.MedianHost, verb), subject, strings.Join(links, "; ")),
			Detail: "Each replica's stream left this host together with the others', and this host's link was not full, so what held " + names(weak) +
				" is on the way to it or at its end: a slower or busier link, a shaper or a WAN segment, loss, a long round trip with a small window, or the replica's own host. " +
				"Its send queue, the log a failover there would lose, grows first. `narrows net stream --to " + weak[0].Name + "` says what holds one stream on that path.",
			Values: map[string]float64{"median_share": weak[0].Share, "throughput_bits_per_second": weak[0].Stream.Throughput,
				"median_host_bits_per_second": t.MedianHost}})
	}
	if len(slow) > 0 {
		var whys []string
		seen := map[string]bool{}
		unknown := false
		for _, h := range slow {
			l := linkOf(f, h.Interface)
			if seen[l.Interface] {
				continue
			}
			seen[l.Interface] = true
			if full[l.Interface] {
				whys = append(whys, fmt.Sprintf("this host's link %s was full (%.0f%% of its %s%s), and on a full link TCP gives a replica farther away, or slower to answer, a smaller share",
					linkName(l), 100*l.Share, metric.FormatBitRate(l.Rate), rateFrom(l)))
				continue
			}
			unknown = true
			whys = append(whys, "this host's link rate is not known: "+l.RateUnknown)
		}
		detail := "Run `narrows net stream --to " + slow[0].Name + "` alone: a replica that gets no more alone has the weak path; one that gets more shared this host's link with the others."
		if unknown {
			detail += " Or give this host's link rate (its port's speed, a cloud instance's bandwidth) with --assume nic=RATE: a link with room left names the path."
		}
		out = append(out, result.Finding{Code: "fleetnet.slow_replica", Severity: "warning", Hosts: hostNames(slow),
			Summary: fmt.Sprintf("%s; whether %s or this host's link held %s cannot be told: %s.",
				replicasBelow(slow, t.MedianHost, "received "+log+" at "), map[bool]string{false: "its path", true: "their paths"}[len(slow) > 1],
				map[bool]string{false: "it", true: "them"}[len(slow) > 1], strings.Join(whys, "; ")),
			Detail: detail,
			Values: map[string]float64{"median_share": slow[0].Share, "throughput_bits_per_second": slow[0].Stream.Throughput,
				"median_host_bits_per_second": t.MedianHost}})
	}
	if len(weak) == 0 && len(slow) == 0 && even {
		out = append(out, result.Finding{Code: "fleetnet.even", Severity: "info",
			Summary: fmt.Sprintf("No replica stood out: each of %d received %s at %.0f–%.0f%% of the median replica's %s, all at once.",
				t.Hosts, log, 100*FleetEven, 100/FleetEven, metric.FormatBitRate(t.MedianHost)),
			Detail: "What one replica gets while this host ships to every replica is what each got: no path is weaker than the others.",
			Values: map[string]float64{"median_host_bits_per_second": t.MedianHost, "slowest_host_bits_per_second": t.Slowest, "fastest_host_bits_per_second": t.Fastest}})
	}
	return out
}

// nicLimited is fleetnet.nic_limited for link l, which was full.
func nicLimited(f *result.FleetNet, l result.FleetNetLink) result.Finding {
	each := ""
	if l.Hosts > 0 {
		each = fmt.Sprintf(", about %s each", metric.FormatBitRate(l.Throughput/float64(l.Hosts)))
	}
	return result.Finding{Code: "fleetnet.nic_limited", Severity: "warning",
		Summary: fmt.Sprintf("The replicas shared this host's link: %s carried %s on the wire, %.0f%% of its %s%s; %s' streams together%s: this host's NIC, not their paths, was the limit, and each replica more will get less.",
			linkName(l), metric.FormatBitRate(l.WireThroughput), 100*l.Share, metric.FormatBitRate(l.Rate), rateFrom(l), metric.Plural(int64(l.Hosts), "replica"), each),
		Detail: "A primary sends its log to each replica over connections of its own, so N replicas take N times the log rate out of this host's link: at this link's rate each of " +
			fmt.Sprint(l.Hosts) + " gets about its share of it. A faster link (or a bond whose hashing spreads the replicas), fewer replicas fed from this host (a cascading replica relays to the rest), or a compressed log stream raises what each gets.",
		Values: map[string]float64{"rate_bits_per_second": l.Rate, "wire_throughput_bits_per_second": l.WireThroughput, "rate_share": l.Share}}
}

// replicasBelow names each host of hs with its share of the median and
// its figures, after verb: "Replica db7 received the log at 41% of the
// median replica's rate (38.0 Mbit/s against 93.0 Mbit/s; round trip 31
// ms, 0.4% sent again)".
func replicasBelow(hs []result.FleetNetHost, median float64, verb string) string {
	var parts []string
	for _, h := range hs {
		r := h.Stream
		figs := metric.FormatBitRate(r.Throughput) + " against " + metric.FormatBitRate(median)
		if t := r.TCP; t != nil && t.RTT > 0 {
			figs += "; round trip " + metric.FormatDuration(t.RTT.D())
			if t.RetransRatio > 0 {
				figs += fmt.Sprintf(", %.1f%% sent again", 100*t.RetransRatio)
			}
		}
		parts = append(parts, fmt.Sprintf("replica %s %s%.0f%% of the median replica's rate (%s)", h.Name, verb, 100*h.Share, figs))
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("and %d more", len(parts)-6))
	}
	return "R" + strings.Join(parts, "; ")[1:]
}

// hostNames are hs's names, every one (a finding's Hosts).
func hostNames(hs []result.FleetNetHost) []string {
	var n []string
	for _, h := range hs {
		n = append(n, h.Name)
	}
	return n
}

func names(hs []result.FleetNetHost) string {
	var n []string
	for _, h := range hs {
		n = append(n, h.Name)
	}
	if len(n) > 6 {
		n = append(n[:6], fmt.Sprintf("%d more", len(n)-6))
	}
	return strings.Join(n, ", ")
}

// linkOf is the fleet's link on interface dev.
func linkOf(f *result.FleetNet, dev string) result.FleetNetLink {
	for _, l := range f.Links {
		if l.Interface == dev {
			return l
		}
	}
	return result.FleetNetLink{Interface: dev, RateUnknown: "its interface was not found"}
}

func linkName(l result.FleetNetLink) string {
	if l.Interface == "" {
		return "its interface"
	}
	return l.Interface
}

// rateFrom says where a link's rate came from, when given by hand.
func rateFrom(l result.FleetNetLink) string {
	if l.RateFrom == result.RateFromAssumed {
		return ", as given by --assume nic"
	}
	return ""
}
