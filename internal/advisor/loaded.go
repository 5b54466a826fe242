package advisor

import (
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// underLoad turns `narrows net rr --under-load` into what a load on the
// link costs a chatty session: the same report's wire time, idle and
// during the load, and where the queue is.
func underLoad(l *result.Loaded) []result.Finding {
	if l.Idle.RoundTrips == 0 || l.Loaded.RoundTrips == 0 {
		return nil
	}
	q := float64(l.Config.Queries)
	idle, busy := q*l.Idle.Mean.D().Seconds(), q*l.Loaded.Mean.D().Seconds()
	way := map[string]string{result.DirUp: "on the way to the agent", result.DirDown: "on the way back from the agent", result.DirBoth: "on the path"}[l.Config.Direction]
	values := map[string]float64{"queries": q, "idle_wire_seconds": idle, "loaded_wire_seconds": busy, "rise_seconds": l.Rise.D().Seconds(),
		// Base units, as every figure's name has them: the draft's RPM ÷ 60.
		"responsiveness_round_trips_per_second": l.Responsiveness / 60, "idle_responsiveness_round_trips_per_second": l.IdleResponsiveness / 60}
	// A rise within a fifth of the idle round trip, or under 200 µs, is
	// no queue worth the name: the path keeps it short (or flow-queues).
	if l.Rise.D() <= max(l.Idle.P50.D()/5, 200_000) {
		if busy > 1.5*idle {
			return append([]result.Finding{{Code: "rr.under_load_tail", Severity: "warning",
				Summary: fmt.Sprintf("Under a load (%s) the median round trip held (%s idle, %s loaded) but the tail grew: p99 %s against %s, and the mean with it, so a %s-query report's round trips take %.2f s instead of %.2f s (%s × the mean round trip).",
					metric.FormatBitRate(l.Throughput), metric.FormatDuration(l.Idle.P50.D()), metric.FormatDuration(l.Loaded.P50.D()),
					metric.FormatDuration(l.Loaded.P99.D()), metric.FormatDuration(l.Idle.P99.D()), metric.FormatCount(int64(q)), busy, idle, metric.FormatCount(int64(q))),
				Detail: tailCause(l, values),
				Values: values}}, selfQueue(l, false)...)
		}
		if !filled(l) {
			// Nothing says the load reached the path's narrowest hop: no
			// packet of it was lost, and its own connections' round trip
			// is the idle one. Its streams were held short of the path
			// (each by its window, a sender or a CPU), so no queue was
			// put to the test: "barely moves" would reassure falsely.
			return append([]result.Finding{{Code: "rr.under_load_unfilled", Severity: "info",
				Summary: fmt.Sprintf("The load (%d streams, %s) did not fill the path: none of its packets was lost and its own round trip stayed at the idle one (%s), so a queue on the path was not tested; the round trips held (p50 %s idle, %s under load).",
					l.Config.Streams, metric.FormatBitRate(l.Throughput), metric.FormatDuration(l.Self.D()), metric.FormatDuration(l.Idle.P50.D()), metric.FormatDuration(l.Loaded.P50.D())),
				Detail: "Its streams were held short of the path's rate, each by its window (net stream's verdict says when), the sender or a CPU. " +
					"A backup or a replica catching up with larger windows may fill it and find a queue: measure again with the windows raised, or more load streams (--load-streams 8).",
				Values: values}}, selfQueue(l, false)...)
		}
		return append([]result.Finding{{Code: "rr.under_load_ok", Severity: "info",
			Summary: fmt.Sprintf("A load filling the path (%s) barely moves the round trips: p50 %s idle, %s under load.",
				metric.FormatBitRate(l.Throughput), metric.FormatDuration(l.Idle.P50.D()), metric.FormatDuration(l.Loaded.P50.D())),
			Detail: fmt.Sprintf("The path keeps its queue short %s (a small buffer, active queue management or flow queueing): a backup or a replica catching up "+
				"leaves a chatty session's %s queries at %.2f s of round trips instead of %.2f s (at the mean round trip). Responsiveness %s RPM under load.",
				way, metric.FormatCount(int64(q)), busy, idle, metric.FormatCount(int64(l.Responsiveness+0.5))),
			Values: values}}, selfQueue(l, false)...)
	}
	out := []result.Finding{{Code: "rr.bufferbloat", Severity: "warning",
		// One statistic in the headline, and said: the mean, which is what a
		// report's total is made of (5,000 × the mean round trip). The
		// median rise (the queue the draft reads) is in the detail, named.
		Summary: fmt.Sprintf("During a backup over this link a %s-query report takes %.2f s of round trips instead of %.2f s: the mean round trip rises from %s to %s as a queue builds up %s.",
			metric.FormatCount(int64(q)), busy, idle, metric.FormatDuration(l.Idle.Mean.D()), metric.FormatDuration(l.Loaded.Mean.D()), way),
		Detail: fmt.Sprintf("With %d streams filling the path (%s), the median round trip on a connection of its own went from %s to %s (p99 %s). "+
			"A device's buffer at the narrowest hop (a switch, a router, a firewall, a virtual switch or the NIC) holds that much data before it sends it; "+
			"every query waits behind the backup. Limit the bulk transfer below the path's rate (pg_basebackup --max-rate, RMAN RATE, a QoS class), "+
			"or ask for a smaller buffer or active queue management (fq_codel, cake) at that hop. Responsiveness %s RPM under load against %s idle.",
			l.Config.Streams, metric.FormatBitRate(l.Throughput), metric.FormatDuration(l.Idle.P50.D()), metric.FormatDuration(l.Loaded.P50.D()),
			metric.FormatDuration(l.Loaded.P99.D()), metric.FormatCount(int64(l.Responsiveness+0.5)), metric.FormatCount(int64(l.IdleResponsiveness+0.5))),
		Values: values}}
	return append(out, selfQueue(l, true)...)
}

// filled is whether the load reached the path's narrowest hop: its
// senders lost packets there (a queue full, or a policer), or their own
// connections' round trip rose above the idle one (a queue they fill,
// shared or their own). A load whose streams are each held by a window,
// a sender or a CPU below the path's rate shows neither. Without the
// senders' TCP state (no samples) it is taken as filled, as before.
func filled(l *result.Loaded) bool {
	if l.Retransmits > 0 || l.SelfSamples == 0 || l.Self <= 0 {
		return true
	}
	idle := l.Idle.P50.D()
	return l.Self.D() > idle+max(idle/4, 200*time.Microsecond)
}

// selfQueue is the loaded connections' own round trip when it is over
// twice a separate connection's: a queue only they wait in. Behind a
// shared queue (queued) it adds to the queue; without one (flow queueing,
// a per-connection shaper) it is the only queue, and a separate
// connection's calm hides it.
func selfQueue(l *result.Loaded, queued bool) []result.Finding {
	self, sep := l.Self.D(), l.Loaded.P50.D()
	if sep <= 0 || self <= 2*sep {
		return nil
	}
	detail := "That is what a replication stream's own acknowledgements wait when it is the load: its sender keeps more in flight than the path's queue, " +
		"so a synchronous replica's commit waits behind its own stream's backlog as well as the queue."
	if !queued {
		detail = "The path queues each connection apart (flow queueing, or a per-connection shaper): a separate connection's queries do not wait, " +
			"but a connection that is itself the load waits behind its own backlog. A synchronous replica's commit waits that long whenever its own stream is busy " +
			"(a large transaction's log, a replica catching up), though a ping beside it shows nothing."
	}
	return []result.Finding{{Code: "rr.self_queue", Severity: "info",
		Summary: fmt.Sprintf("On the loaded connections themselves the kernel's round trip is %s, %.1f× a separate connection's.", metric.FormatDuration(self), float64(self)/float64(sep)),
		Detail:  detail, Values: map[string]float64{"self_rtt_seconds": self.Seconds(), "separate_rtt_seconds": sep.Seconds()}}}
}

// CPULimitTail is the share of its CPU limit's periods in which this end
// was held off the CPU during the loaded round trips, past which the
// limit is named as what the load took from them: a round trip that comes
// due while the group is throttled waits for the next period (up to 100
// ms by default), so even a few throttled periods in a hundred make a
// tail while the median holds.
const CPULimitTail = 0.05

// tailCause words what the load took from the round trips when no queue
// built up on the path: this end's CPU limit where it held the process
// off the CPU, else the hosts' CPUs or a virtual switch, to look at.
func tailCause(l *result.Loaded, values map[string]float64) string {
	if l.CPULimitCores > 0 && l.LoadedThrottledShare >= CPULimitTail {
		values["cpu_limit_cores"], values["loaded_cpu_throttled_share"] = l.CPULimitCores, l.LoadedThrottledShare
		return fmt.Sprintf("No queue built up on the path; the load took this host's CPU: narrows runs under a CPU limit of %.3g of a core (its cgroup's quota), "+
			"which held it off the CPU in %.0f%% of the limit's periods under the load (%.0f%% idle), and a round trip that came due then waited for the next period. "+
			"A chatty application in one container (or service) with a backup or a replica's stream meets the same: raise the limit, "+
			"or run the bulk transfer outside it.", l.CPULimitCores, 100*l.LoadedThrottledShare, 100*l.IdleThrottledShare)
	}
	if p99, idle := l.Loaded.P99.D(), l.Idle.P50.D(); p99 >= rtoMin && p99 > 10*idle {
		// A round trip of TCP's least retransmission timeout or more on a
		// path many times faster: a packet lost and sent again (the
		// testbed's 2-packet queue dropped queries' packets under the load
		// and read 208–211 ms at the p99 on a 2 ms line).
		values["rto_min_seconds"] = rtoMin.Seconds()
		return fmt.Sprintf("No queue built up on the path, but round trips of %s and more on a path of %s are packets lost and sent again after TCP's retransmission timeout (%s at the least on Linux): "+
			"under the load the path dropped some of the queries' packets (a shallow buffer or a policer at the narrowest hop), or the hosts held them. "+
			"Limit the bulk transfer below the path's rate (pg_basebackup --max-rate, RMAN RATE, a QoS class), and look at the drops of the hop and the CPU figures of both hosts.",
			metric.FormatDuration(l.Loaded.P99.D()), metric.FormatDuration(idle), metric.FormatDuration(rtoMin))
	}
	return "No queue built up on the path; the load took something else the round trips need: the two hosts' CPUs (the load's copies and interrupts), " +
		"or a busy virtual switch. Look at the CPU figures of both hosts during a backup."
}

// rtoMin is Linux's least TCP retransmission timeout (TCP_RTO_MIN): a
// lost packet's round trip takes at least that.
const rtoMin = 200 * time.Millisecond
