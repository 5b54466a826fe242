// Package advisor turns a Report into findings a DBA can act on: what
// limits one stream, what a link means for a replication stream, how much
// of a chatty report's time is round trips. It reads figures only: it never
// touches a socket, a file or the clock, so a saved Report can be advised
// again offline.
package advisor

import (
	"fmt"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// Thresholds behind the stream verdicts.
const (
	// CPUBound: a single stream is one thread at each end; past this share
	// of a core that thread, not the link, sets the rate.
	CPUBound = 85.0
	// WindowBound: share of busy time stalled on the receiver's window or
	// the sender's buffer.
	WindowBound = 0.5
	// FullWindow: bytes in flight (rate × RTT) over the peer's advertised
	// window. A paced sender (bbr) rarely stalls on the window, so the
	// stall counters miss it, but a stream that keeps a whole window in
	// flight every round trip is window-limited all the same (measured on
	// the testbed's 10 ms line with a 64 KiB window: 42% stall time, 97% of
	// window/RTT).
	FullWindow = 0.85
	// LossBound: share of bytes sent again. On a shared path a little loss
	// is how TCP finds the rate; past this, loss recovery dominates.
	LossBound = 0.01
	// Headroom: N streams carrying this much more than one means one
	// stream cannot fill the link.
	Headroom = 1.3
)

// Advise returns the findings for a report, most important first.
func Advise(r *result.Report) []result.Finding {
	var out []result.Finding
	if r.Stream != nil {
		out = append(out, stream(r.Stream)...)
	}
	if r.RR != nil {
		out = append(out, rr(r.RR)...)
	}
	if r.Disk != nil {
		out = append(out, disk(r.Disk)...) // disk.go
	}
	if r.DBPing != nil { // db.go
		out = append(out, dbping(r.DBPing)...)
	}
	if r.Repl != nil {
		out = append(out, repl(r.Repl)...)
	}
	if r.DBLoad != nil {
		out = append(out, dbload(r.DBLoad)...)
	}
	if r.BackupPlan != nil {
		out = append(out, backupPlan(r.BackupPlan)...) // planbackup.go
	}
	if out == nil {
		out = []result.Finding{}
	}
	return out
}

func mbps(bitsPerSecond float64) string { return metric.FormatByteRate(bitsPerSecond / 8) }

func stream(s *result.Stream) []result.Finding {
	var out []result.Finding
	if len(s.Runs) == 0 {
		return out
	}
	for _, run := range s.Runs {
		if run.Phase != result.PhaseSingle {
			continue
		}
		out = append(out, result.Finding{
			Code: "stream.single_stream_capacity", Severity: "info",
			Summary: fmt.Sprintf("One stream (%s) carried %s = %s.", run.Direction, metric.FormatBitRate(run.Throughput), mbps(run.Throughput)),
			Detail: fmt.Sprintf("Replication ships each database's log over one such connection (an Always On replica per database, a PostgreSQL walsender, a MySQL IO thread): "+
				"if the primary generates log faster than %s, the send queue, which is the data a failover would lose, grows.", mbps(run.Throughput)),
			Values: map[string]float64{"throughput_bits_per_second": run.Throughput, "throughput_bytes_per_second": run.Throughput / 8},
		})
		out = append(out, limit(run))
		if f, ok := wire(run); ok {
			out = append(out, f)
		}
	}
	if c := s.Comparison; c != nil {
		f := result.Finding{Code: "stream.parallel_comparison",
			Values: map[string]float64{"single_stream_bits_per_second": c.Single, "aggregate_bits_per_second": c.Aggregate, "aggregate_to_single_ratio": c.Ratio}}
		if c.Ratio >= Headroom {
			f.Severity = "warning"
			f.Summary = fmt.Sprintf("%d streams carried %s, %.1f× one stream: the link has room that one stream cannot use.", c.Streams, metric.FormatBitRate(c.Aggregate), c.Ratio)
			f.Detail = "File copies and backups to many files use parallel streams and look fast; a replication stream cannot. Judge replication by the single-stream figure, and raise it with larger TCP windows (when window-limited) or a shorter path, not a faster link."
		} else {
			f.Severity = "info"
			f.Summary = fmt.Sprintf("%d streams carried %s, %.2f× one stream: one stream already gets what the link gives.", c.Streams, metric.FormatBitRate(c.Aggregate), c.Ratio)
			f.Detail = "Adding connections does not help here: the link (or the machines) is the limit for replication too."
		}
		out = append(out, f)
	}
	return out
}

// limit says what held one stream back.
func limit(run result.StreamRun) result.Finding {
	t := run.TCP
	cpuSide, cpuPct := "client", run.CPU.Local
	if run.CPU.Remote > cpuPct {
		cpuSide, cpuPct = "agent", run.CPU.Remote
	}
	switch {
	case run.CPU.Available && cpuPct >= CPUBound:
		return result.Finding{Code: "stream.cpu_limited", Severity: "warning",
			Summary: fmt.Sprintf("CPU-limited: the %s used %.0f%% of a core.", cpuSide, cpuPct),
			Detail: "One stream is one thread at each end, so one core sets its rate here, not the link. Database replication has the same limit; " +
				"on a real link, check that the figure is far below the link rate before blaming the network.",
			Values: map[string]float64{"cpu_percent_of_core": cpuPct}}
	case t == nil:
		return result.Finding{Code: "stream.limit_unknown", Severity: "info",
			Summary: "What limits this stream cannot be told on this platform: TCP_INFO is not available.",
			Detail:  "Run the agent or the client on Linux to see RTT, window and retransmits."}
	case t.RwndLimited+t.SndbufLimited >= WindowBound || (t.SndWndBytes > 0 && float64(t.BDPBytes) >= FullWindow*float64(t.SndWndBytes)):
		which, share := "the receiver's window", t.RwndLimited
		if t.SndbufLimited > t.RwndLimited {
			which, share = "its own send buffer", t.SndbufLimited
		}
		window := float64(t.BDPBytes)
		summary := fmt.Sprintf("Window-limited: the sender waited on %s %.0f%% of the time.", which, 100*share)
		if t.RwndLimited+t.SndbufLimited < WindowBound {
			summary = fmt.Sprintf("Window-limited: a whole window (%s advertised, %s in flight) crossed every round trip.",
				metric.FormatBytes(t.SndWndBytes), metric.FormatBytes(t.BDPBytes))
		}
		return result.Finding{Code: "stream.window_limited", Severity: "warning",
			Summary: summary,
			Detail: fmt.Sprintf("One stream moves at most one window per round trip: about %s in flight at %s RTT gives %s. "+
				"To carry more per stream, raise the TCP buffer limits on both ends (Linux: net.ipv4.tcp_rmem and tcp_wmem maximum; Windows: receive window auto-tuning) "+
				"or shorten the path; the link itself may have room (compare with --streams 8).",
				metric.FormatBytes(int64(window)), metric.FormatDuration(t.RTT.D()), metric.FormatBitRate(run.Throughput)),
			Values: map[string]float64{"rwnd_limited_ratio": t.RwndLimited, "sndbuf_limited_ratio": t.SndbufLimited,
				"bdp_bytes": window, "rtt_seconds": t.RTT.D().Seconds()}}
	case t.RetransRatio >= LossBound:
		return result.Finding{Code: "stream.loss_limited", Severity: "warning",
			Summary: fmt.Sprintf("Loss-limited: %.1f%% of the bytes were sent again (%d retransmits).", 100*t.RetransRatio, t.Retransmits),
			Detail: "TCP slows down at every loss, and one stream over a long, lossy path stays far below the link rate. " +
				"Look for a congested or faulty hop (interface errors, a policer, a duplex mismatch) before buying bandwidth.",
			Values: map[string]float64{"retransmit_ratio": t.RetransRatio}}
	default:
		return result.Finding{Code: "stream.link_limited", Severity: "info",
			Summary: fmt.Sprintf("Link-limited: the stream filled the path (window stalls %.0f%%, %.2f%% retransmitted, CPU %.0f%% of a core at most).",
				100*(t.RwndLimited+t.SndbufLimited), 100*t.RetransRatio, cpuPct),
			Detail: "Neither the window, nor loss, nor CPU held this stream back: this is the rate of the link or of a shaper on it.",
			Values: map[string]float64{"retransmit_ratio": t.RetransRatio}}
	}
}

// wire accounts for the gap between payload and line rate.
func wire(run result.StreamRun) (result.Finding, bool) {
	if run.WireThroughput <= 0 || run.TCP == nil || run.TCP.MSSBytes <= 0 {
		return result.Finding{}, false
	}
	overhead := float64(run.HeaderBytes) / float64(run.TCP.MSSBytes+run.HeaderBytes)
	return result.Finding{Code: "stream.wire_overhead", Severity: "info",
		Summary: fmt.Sprintf("On the wire ≈ %s: payload %s plus %d bytes of Ethernet/IP/TCP headers per %d-byte segment (%.1f%%) and %.2f%% sent again.",
			metric.FormatBitRate(run.WireThroughput), metric.FormatBitRate(run.Throughput), run.HeaderBytes, run.TCP.MSSBytes, 100*overhead, 100*run.TCP.RetransRatio),
		Detail: "Payload is what a database can move; a link or shaper rate counts the headers too (and a physical Ethernet port 24 bytes more of preamble and gap per frame).",
		Values: map[string]float64{"wire_throughput_bits_per_second": run.WireThroughput, "header_overhead_ratio": overhead}}, true
}

func rr(r *result.RR) []result.Finding {
	if r.RoundTrips == 0 {
		return nil
	}
	q := r.Config.Queries
	wireMean := float64(q) * r.Mean.D().Seconds()
	wireP99 := float64(q) * r.P99.D().Seconds()
	out := []result.Finding{{Code: "rr.wire_time", Severity: "info",
		Summary: fmt.Sprintf("A report that issues %s queries one after another spends %.2f s on round trips alone (%s each on average).",
			metric.FormatCount(q), wireMean, metric.FormatDuration(r.Mean.D())),
		Detail: fmt.Sprintf("That is before the server does any work: %s round trips per second is the ceiling for one session on this path. "+
			"At the p99 round trip it would be %.2f s. Fewer, larger queries (or a closer app server) are the cure; bandwidth is not.",
			metric.FormatCount(int64(r.Rate)), wireP99),
		Values: map[string]float64{"queries": float64(q), "wire_seconds": wireMean, "wire_p99_seconds": wireP99}}}
	if f, ok := tail("rr.tail", "round trips", r.Latency,
		"A chatty session feels the tail: look for CPU power saving, interrupt moderation, a busy virtual switch or a congested hop."); ok {
		out = append(out, f)
	}
	return out
}

// TailRatio: a p99 over this many times the p50 is a tail a chatty session
// feels.
const TailRatio = 5

// tail is the jitter finding of a round-trip distribution (what names its
// trips: "round trips", "queries"), when its p99 is over TailRatio × p50.
func tail(code, what string, l result.Latency, detail string) (result.Finding, bool) {
	if l.P50 <= 0 || l.P99.D() <= TailRatio*l.P50.D() {
		return result.Finding{}, false
	}
	ratio := float64(l.P99) / float64(l.P50)
	return result.Finding{Code: code, Severity: "warning",
		Summary: fmt.Sprintf("Jittery: 1%% of %s took over %s, %.0f× the median %s.",
			what, metric.FormatDuration(l.P99.D()), ratio, metric.FormatDuration(l.P50.D())),
		Detail: detail,
		Values: map[string]float64{"p99_to_p50_ratio": ratio}}, true
}
