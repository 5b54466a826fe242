// Package advisor turns a Report into findings a DBA can act on: what
// limits one stream, what a link means for a replication stream, how much
// of a chatty report's time is round trips. It reads figures only: it never
// touches a socket, a file or the clock, so a saved Report can be advised
// again offline.
package advisor

import (
	"fmt"
	"math"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// Thresholds behind the stream verdicts.
const (
	// CPUBound: a single stream is one thread at each end; past this share
	// of a core that thread, not the link, sets the rate.
	CPUBound = 85.0
	// CPUThrottled: the share of its CPU limit's periods in which an end
	// used up its quota and was held off the CPU, past which that limit
	// (a container's, a service's), not the link, sets the rate: the end
	// wanted more CPU than it was given most of the time.
	CPUThrottled = 0.5
	// WindowBound: share of busy time stalled on the receiver's window or
	// the sender's buffer past which the window is what limits the stream.
	WindowBound = 0.5
	// WindowSome: past this share of stalls the window held the stream
	// back part of the time (a stream that fills its path keeps its
	// window ahead of it and stalls on it close to never): not link-limited,
	// unless N streams, with N windows, carried no more.
	WindowSome = 0.1
	// FullWindow: bytes in flight (rate × RTT) over the peer's advertised
	// window. A paced sender (bbr) rarely stalls on the window, so the
	// stall counters miss it, but a stream that keeps a whole window in
	// flight every round trip is window-limited all the same (measured on
	// the testbed's 10 ms line with a 64 KiB window: 42% stall time, 97% of
	// window/RTT).
	FullWindow = 0.85
	// LossBound: share of bytes sent again. On a shared path a little loss
	// is how TCP finds the rate; past this, loss recovery dominates. A
	// stream whose run cannot be split into start-up and steady state (too
	// short, or saved by an older narrows) is judged on it.
	LossBound = 0.01
	// LossSteady: with no N-stream run to compare, the least share of
	// bytes sent again through the steady state that is called loss. A
	// loss-based sender filling a clean link's queue loses about 8/(3W²)
	// of its packets (W its window in packets): past 0.05% only below a
	// 73-packet window, a path too small to matter.
	LossSteady = 0.0005
	// MathisSlack: a loss-based sender (Reno, CUBIC in its TCP-friendly
	// region, 1.7/√p) carries little more than Mathis et al.'s bound
	// (1.22/√p) at its loss rate. A stream faster than this many times the
	// bound was not held by its losses: a sender that paces past random
	// loss (BBR), or losses it caused itself at the link's rate.
	MathisSlack = 3.0
	// CoreHeld: a core busy this share of a run (idle under 3% of it:
	// /proc/stat counts in 10 ms ticks) had nothing left to give.
	CoreHeld = 0.97
	// CorePacket: the share of such a core's time in packet work (softirq
	// or DPCs, and interrupts) past which the packets' own handling, not
	// a thread of the program, is what filled it. An unshaped veth stream
	// with its two ends and its receive steered onto one core spent 0.45
	// (offloads on) to 0.73 (off, 1500-byte packets) of it there.
	CorePacket = 0.25
	// Headroom: N streams carrying this much more than one means one
	// stream cannot fill the link.
	Headroom = 1.3
)

// Advise returns the findings for a report, most important first.
func Advise(r *result.Report) []result.Finding {
	var out []result.Finding
	if advise := adviser(r.Part(), r.Facts, r.AgentFacts); advise != nil {
		out = advise()
	}
	if out == nil {
		out = []result.Finding{}
	}
	return out
}

// adviser is what gives one part's findings, nil for a kind the advisor
// does not know (TestAdviseEveryPart holds it to result.Parts: a kind
// with no case here is a test failure, not a report without findings).
// here and agent are the report's facts of its two ends.
func adviser(p result.Part, here, agent *result.Facts) func() []result.Finding {
	switch p := p.(type) {
	case *result.Stream:
		return func() []result.Finding { return stream(p, here, agent) }
	case *result.RR:
		return func() []result.Finding { return rr(p) }
	case *result.Commit:
		return func() []result.Finding { return commitFindings(p) } // commit.go
	case *result.MTU:
		return func() []result.Finding { return mtu(p) } // mtu.go
	case *result.Host:
		return func() []result.Finding { return host(p) } // host.go
	case *result.Loaded:
		return func() []result.Finding { return underLoad(p) } // loaded.go
	case *result.Disk:
		return func() []result.Finding { return disk(p) } // disk.go
	case *result.DBPing:
		return func() []result.Finding { return dbping(p) } // db.go
	case *result.Repl:
		return func() []result.Finding { return repl(p) }
	case *result.DBLoad:
		return func() []result.Finding { return dbload(p) }
	case *result.BackupPlan:
		return func() []result.Finding { return backupPlan(p) } // planbackup.go
	case *result.SyncPlan:
		return func() []result.Finding { return syncPlan(p) } // plansync.go
	case *result.ReplicaPlan:
		return func() []result.Finding { return replicaPlan(p) } // planreplica.go
	case *result.ChattyPlan:
		return func() []result.Finding { return chattyPlan(p) } // planchatty.go
	case *result.Watch:
		// A watch's findings are its probes', made as it polls.
		return func() []result.Finding { return nil }
	case *result.Doctor:
		// A doctor's findings are its steps' verdicts, drawn already.
		return func() []result.Finding { return p.Verdicts }
	case *result.Fleet:
		return func() []result.Finding { return fleet(p) } // fleet.go
	case *result.FleetNet:
		return func() []result.Finding { return fleetNet(p) } // fleetnet.go
	case *result.FleetWatch:
		// As a watch's: what it sees goes to Prometheus as it runs.
		return func() []result.Finding { return nil }
	}
	return nil
}

func mbps(bitsPerSecond float64) string { return metric.FormatByteRate(bitsPerSecond / 8) }

// stream advises a stream; here and agent are the ends' facts (the
// interfaces the run's traffic used, their offloads), nil when not read.
func stream(s *result.Stream, here, agent *result.Facts) []result.Finding {
	var out, tries []result.Finding
	helped := false
	for _, try := range []func(*result.Stream) (result.Finding, bool){steering, offloads} {
		if f, ok := try(s); ok {
			tries = append(tries, f)
			helped = helped || f.Code == "stream.rps_helped" || f.Code == "stream.offloads_helped"
		}
	}
	var compared *reading
	for _, run := range s.Runs {
		if run.Phase != result.PhaseSingle {
			continue
		}
		rd := read(run, s, here, agent)
		if c := s.Comparison; c != nil && c.Direction == run.Direction {
			compared = &rd
		}
		out = append(out, result.Finding{
			Code: "stream.single_stream_capacity", Severity: "info",
			Summary: fmt.Sprintf("One stream (%s) carried %s = %s.", run.Direction, metric.FormatBitRate(run.Throughput), mbps(run.Throughput)),
			Detail: fmt.Sprintf("Replication ships each database's log over one such connection (an Always On replica per database, a PostgreSQL walsender, a MySQL IO thread): "+
				"if the primary generates log faster than %s, the send queue, which is the data a failover would lose, grows.", mbps(run.Throughput)),
			Values: map[string]float64{"throughput_bits_per_second": run.Throughput, "throughput_bytes_per_second": run.Throughput / 8},
		})
		// Both directions measured (--bidir, doctor's two runs): each
		// verdict names its direction, or two read the same words.
		named := func(f result.Finding) result.Finding {
			if singles(s) > 1 {
				f.Summary = strings.ToUpper(run.Direction[:1]) + run.Direction[1:] + ": " + f.Summary
			}
			return f
		}
		// A try that sped the stream up shows the link did not set its
		// rate, whatever the single stream's counters said (a veth's
		// stream with no core full read link-limited, and tripled with
		// the offloads on): the try's finding stands, the link's is not
		// said.
		if lim := rd.limit(); !helped || lim.Code != "stream.link_limited" {
			out = append(out, named(lim))
		}
		if f, ok := wire(run, s.SameHost); ok {
			out = append(out, named(f))
		}
	}
	if c := s.Comparison; c != nil {
		rd := compared
		if rd == nil { // no single run in that direction: judge the figures alone
			rd = &reading{cmp: c, sameHost: s.SameHost, cause: result.LimitUnknown}
		}
		out = append(out, rd.comparison())
	}
	return append(out, tries...)
}

// singles counts a stream's one-stream runs (one a direction measured).
func singles(s *result.Stream) int {
	n := 0
	for _, r := range s.Runs {
		if r.Phase == result.PhaseSingle {
			n++
		}
	}
	return n
}

// What held one stream back, one cause per run, read once, is named as
// a replica plan reads it: result.Limit*.

// reading is one interpretation of a single-stream run: its TCP_INFO, its
// CPU and, where one ran, the N-stream run in the same direction. The limit
// verdict and the comparison are both worded from it, so they cannot
// contradict each other: a stream N streams outran was not at the link's
// rate, and window stalls that N windows did not overcome did not cost it
// its rate.
type reading struct {
	run      result.StreamRun
	cmp      *result.Comparison // the same direction's N-stream run, or nil
	sameHost bool
	cause    string
	cpuSide  string
	cpuPct   float64
	// throttled: the client's CPU limit held it off the CPU (CPUThrottled).
	throttled bool
	stall     float64 // share of busy time stalled on a window
	// fullWindow: rate × RTT reached the peer's window (a paced sender
	// keeps it full without stalling on it).
	fullWindow bool
	// held are the ends whose busiest core was full, much of it packets.
	held []heldCore
}

// heldCore is one end's full core.
type heldCore struct {
	end   string // "this host", "the agent"
	role  string // "sending" or "receiving"
	load  *result.CoreLoad
	facts *result.Facts // the end's, nil when not read
}

// offloadsOff names the offloads of the end's interfaces that its role
// uses and that are off: a sender's segmentation (tso, gso), a
// receiver's coalescing of segments (gro), each making the core handle
// every packet at the MTU's size: "va: tso, gso".
func (h heldCore) offloadsOff() []string {
	if h.facts == nil {
		return nil
	}
	uses := []string{"gro"}
	if h.role == "sending" {
		uses = []string{"tso", "gso"}
	}
	var out []string
	for _, n := range h.facts.Interfaces {
		var off []string
		for _, o := range uses {
			if on, read := n.Offloads[o]; read && !on {
				off = append(off, o)
			}
		}
		if len(off) > 0 {
			out = append(out, n.Name+": "+strings.Join(off, ", "))
		}
	}
	return out
}

// fullCores are the ends whose busiest core had no time left over the
// run, CorePacket of it or more handling packets; here and agent are the
// ends' facts.
func fullCores(run result.StreamRun, here, agent *result.Facts) []heldCore {
	if run.Cores == nil {
		return nil
	}
	send, recv := "sending", "receiving"
	if run.Direction == "reverse" {
		send, recv = recv, send
	}
	var out []heldCore
	for _, e := range []heldCore{{"this host", send, run.Cores.Local, here}, {"the agent", recv, run.Cores.Remote, agent}} {
		if PacketCoreFull(e.load) {
			out = append(out, e)
		}
	}
	return out
}

// PacketCoreFull: a core with no time left over the run, CorePacket of
// it or more handling packets (nil: not read).
func PacketCoreFull(l *result.CoreLoad) bool {
	return l != nil && l.Busy >= CoreHeld && l.Packet() >= CorePacket
}

func read(run result.StreamRun, s *result.Stream, here, agent *result.Facts) reading {
	rd := reading{run: run, sameHost: s.SameHost, cpuSide: "client", cpuPct: run.CPU.Local, held: fullCores(run, here, agent)}
	if c := s.Comparison; c != nil && c.Direction == run.Direction {
		rd.cmp = c
	}
	if run.CPU.Remote > rd.cpuPct {
		rd.cpuSide, rd.cpuPct = "agent", run.CPU.Remote
	}
	t := run.TCP
	if t != nil {
		rd.stall = t.RwndLimited + t.SndbufLimited
		rd.fullWindow = t.SndWndBytes > 0 && float64(t.BDPBytes) >= FullWindow*float64(t.SndWndBytes)
	}
	roomy := rd.cmp != nil && rd.cmp.Ratio >= Headroom
	flat := rd.cmp != nil && rd.cmp.Ratio < Headroom
	cpuBound := run.CPU.Available && rd.cpuPct >= CPUBound
	switch {
	case run.CPU.LocalLimitCores > 0 && run.CPU.LocalThrottledShare >= CPUThrottled:
		// A limit that held this end off the CPU in most of its periods
		// is what sets the rate, on one machine or across a network; its
		// CPU figure reads the limit (20% of a core under a 0.2 limit),
		// never CPUBound.
		rd.cause, rd.throttled, rd.cpuSide, rd.cpuPct = result.LimitCPU, true, "client", run.CPU.Local
	case rd.sameHost && s.Config.WindowBytes == 0 && t != nil:
		// With no network between the ends, the host is the limit,
		// whichever part of it shows: one core (its words quote the CPU
		// figure), or waiting on the receiver's window, which is waiting
		// on the receiving process, not a window a buffer setting would
		// widen (seen 20-34% of the time, worded "window-limited", on a
		// busy machine). A --window asked for is a window: that case
		// reads on.
		rd.cause = result.LimitHost
	case s.Config.WindowBytes > 0 && rd.stall >= WindowBound && !flat && !cpuBound:
		// The window asked for (--window) held the sender most of the
		// run, and N such windows carried more (or none were compared):
		// that window set the rate, whatever a core did beside it. A
		// 4 KiB window's stream, 0.00 Gbit/s and 97% stalled, read a core
		// 98% busy, 35% of it packets, from the other tests' traffic on
		// a fresh clone's 2 CPUs: not its own.
		rd.cause = result.LimitWindow
	case len(rd.held) > 0:
		// Before a thread's share: a core handling packets is full
		// whichever of its work a process is charged for.
		rd.cause = result.LimitCore
	case cpuBound:
		rd.cause = result.LimitCPU
	case t == nil:
		rd.cause = result.LimitUnknown
	case (rd.stall >= WindowSome || rd.fullWindow) && !flat:
		rd.cause = result.LimitWindow
	case rd.lossLimited():
		rd.cause = result.LimitLoss
	case roomy:
		rd.cause = result.LimitPerStream
	case rd.sameHost:
		rd.cause = result.LimitHost
	default:
		rd.cause = result.LimitLink
	}
	if rd.cause == result.LimitPerStream && rd.sameHost {
		rd.cause = result.LimitHost
	}
	return rd
}

// steadyLoss is the share of bytes sent again after the start-up, and
// whether retransmits went on through the steady state: in two of its
// intervals at least, and a quarter of them. (A loss-held stream is slow,
// so its losses are few per interval: reno under 0.1% random loss at
// 30 ms, 15 Mbit/s, had none in 2 of 10 one-second intervals on the
// testbed.) An unsplit run
// gives its whole ratio, sustained.
func steadyLoss(t *result.TCPSummary) (p float64, sustained, split bool) {
	if t.SteadyIntervals == 0 {
		return t.RetransRatio, true, false
	}
	n := t.SteadyLossIntervals
	return t.SteadyRetransRatio, n >= 2 && 4*n >= t.SteadyIntervals, true
}

// mathisRatio is the stream's rate over Mathis et al.'s bound at loss p
// and the RTT it saw; 0 when either is not known.
func (rd *reading) mathisRatio(p float64) float64 {
	t := rd.run.TCP
	rtt := t.RTT.D()
	if rtt <= 0 {
		rtt = t.MinRTT.D()
	}
	m := Mathis(t.MSSBytes, rtt, p)
	if math.IsInf(m, 0) || m <= 0 {
		return 0
	}
	return rd.run.Throughput / 8 / m
}

// lossLimited: retransmits went on through the steady state, not just the
// start-up; the stream was no faster than a sender held by that loss can
// be; and N streams carried more (or, with none to compare, the loss was
// more than a clean link's queue would cause). N streams carrying no more
// is the link, whatever was sent again.
func (rd *reading) lossLimited() bool {
	t := rd.run.TCP
	if rd.cmp != nil && rd.cmp.Ratio < Headroom {
		return false
	}
	p, sustained, split := steadyLoss(t)
	if !sustained || p <= 0 {
		return false
	}
	if r := rd.mathisRatio(p); r > MathisSlack {
		return false
	}
	switch {
	case !split:
		return p >= LossBound
	case rd.cmp != nil:
		return true
	}
	return p >= LossSteady
}

// lossNote words the retransmits of a stream that loss did not hold:
// those of its start-up, or those the link or its sender shrugged off.
func (rd *reading) lossNote() string {
	t := rd.run.TCP
	if t.Retransmits == 0 {
		return ""
	}
	p, sustained, split := steadyLoss(t)
	switch {
	case split && !sustained:
		note := fmt.Sprintf(" %s of its %s retransmits (%.2f%% of the bytes) fell in the start-up (the first %s), slow start overflowing a queue on the path; after it, %d of %d intervals had any (%.3f%% of the bytes): not loss on the line.",
			metric.FormatCount(t.StartupRetransmits), metric.FormatCount(t.Retransmits), 100*t.RetransRatio, metric.FormatDuration(t.StartupEnd.D()),
			t.SteadyLossIntervals, t.SteadyIntervals, 100*p)
		return note
	case p <= 0:
		return ""
	case rd.cmp != nil && rd.cmp.Ratio < Headroom:
		return fmt.Sprintf(" %.2f%% of the bytes were sent again through the run, yet %d streams carried %s: the losses did not set its rate.", 100*p, rd.cmp.Streams, rd.howMuchMore())
	case rd.mathisRatio(p) > MathisSlack:
		return fmt.Sprintf(" %.2f%% of the bytes were sent again through the run, yet it carried %.0f× what a loss-based sender can at that loss (Mathis et al.): the losses did not set its rate (a sender that paces past them, such as BBR).", 100*p, rd.mathisRatio(p))
	}
	return ""
}

// sentAgain words a run's bytes sent again: the whole run's share, and
// the steady state's where the run was split.
func sentAgain(t *result.TCPSummary) string {
	if t.SteadyIntervals == 0 {
		return fmt.Sprintf("%.2f%% sent again", 100*t.RetransRatio)
	}
	return fmt.Sprintf("%.2f%% sent again, %.3f%% after its start-up", 100*t.RetransRatio, 100*t.SteadyRetransRatio)
}

// cpuNote is the CPU figure as the verdicts quote it.
func (rd *reading) cpuNote() string {
	if !rd.run.CPU.Available {
		return "CPU not measured"
	}
	return fmt.Sprintf("CPU %.0f%% of a core at most", rd.cpuPct)
}

// stalls is the window-stall figure as the verdicts quote it: the same
// two shares the summary's window line prints.
func stalls(t *result.TCPSummary) string {
	if t.StallsUnknown {
		return "stall times not reported by the sender's system (Windows before 1809)"
	}
	return fmt.Sprintf("stalled on the receiver's window %.0f%% and on the send buffer %.0f%% of the time", 100*t.RwndLimited, 100*t.SndbufLimited)
}

func (rd *reading) ratioNote() string {
	return fmt.Sprintf("%d streams carried %s, %.2f× one stream", rd.cmp.Streams, metric.FormatBitRate(rd.cmp.Aggregate), rd.cmp.Ratio)
}

// howMuchMore words a ratio under Headroom: "no more" near 1 (or less),
// "little more" up to Headroom, never "no more" for 1.29×.
func (rd *reading) howMuchMore() string {
	if rd.cmp.Ratio < 1.05 {
		return "no more"
	}
	return "little more"
}

// limit says what held the stream back.
func (rd *reading) limit() result.Finding {
	run, t := rd.run, rd.run.TCP
	switch rd.cause {
	case result.LimitCPU:
		if rd.throttled {
			c := run.CPU
			return result.Finding{Code: "stream.cpu_limited", Severity: "warning",
				Summary: fmt.Sprintf("CPU-limited: the client runs under a CPU limit of %.3g of a core (its cgroup's quota), and used it up in %.0f%% of the limit's periods.",
					c.LocalLimitCores, 100*c.LocalThrottledShare),
				Detail: fmt.Sprintf("It used %.0f%% of a core and was held off the CPU for the rest of each period it ran out: the limit, not the link, set this rate, "+
					"and more streams share the same limit. A container's or a service's limit (Kubernetes resources.limits.cpu, docker --cpus, systemd CPUQuota) "+
					"holds a database in it the same way. Measure the network from a host or container without the limit.", c.Local),
				Values: map[string]float64{"cpu_percent_of_core": c.Local, "cpu_limit_cores": c.LocalLimitCores, "cpu_throttled_share": c.LocalThrottledShare}}
		}
		f := result.Finding{Code: "stream.cpu_limited", Severity: "warning",
			Summary: fmt.Sprintf("CPU-limited: the %s used %.0f%% of a core.", rd.cpuSide, rd.cpuPct),
			Detail: "One stream is one thread at each end, so one core sets its rate here, not the link. Database replication has the same limit; " +
				"on a real link, check that the figure is far below the link rate before blaming the network.",
			Values: map[string]float64{"cpu_percent_of_core": rd.cpuPct}}
		switch {
		case rd.cmp != nil && rd.cmp.Ratio < Headroom:
			f.Detail = fmt.Sprintf("%s: more threads carried %s, so the machines' CPUs as a whole, not one stream's thread, set this rate.", rd.ratioNote(), rd.howMuchMore())
		case rd.sameHost:
			f.Detail = "One stream is one thread at each end, so one core sets its rate here; the agent is on this machine, so no network was crossed."
		}
		return f
	case result.LimitCore:
		return rd.coreFinding()
	case result.LimitUnknown:
		return result.Finding{Code: "stream.limit_unknown", Severity: "info",
			Summary: "What limits this stream cannot be told on this platform: TCP_INFO is not available.",
			Detail:  "Run the sending end on Linux, or on Windows 10 1703 / Server 2016 or later (SIO_TCP_INFO), to see RTT, window and retransmits."}
	case result.LimitWindow:
		which, share := "the receiver's window", t.RwndLimited
		if t.SndbufLimited > t.RwndLimited {
			which, share = "its own send buffer", t.SndbufLimited
		}
		var summary string
		switch {
		case rd.stall >= WindowBound:
			summary = fmt.Sprintf("Window-limited: the sender waited on %s %.0f%% of the time.", which, 100*share)
		case rd.fullWindow:
			summary = fmt.Sprintf("Window-limited: rate × RTT (%s) reached the peer's window (%s): a whole window crossed every round trip",
				metric.FormatBytes(t.BDPBytes), metric.FormatBytes(t.SndWndBytes))
			if rd.stall >= WindowSome {
				summary += fmt.Sprintf(", and the sender waited on %s %.0f%% of the time", which, 100*share)
			}
			summary += "."
		default:
			summary = fmt.Sprintf("Partly window-limited: the sender waited on %s %.0f%% of the time.", which, 100*share)
		}
		detail := fmt.Sprintf("One stream moves at most one window per round trip: %s × %s RTT = %s",
			metric.FormatBitRate(run.Throughput), metric.FormatDuration(t.RTT.D()), metric.FormatBytes(t.BDPBytes))
		if t.SndWndBytes > 0 {
			detail += ", against a peer window of " + metric.FormatBytes(t.SndWndBytes)
		}
		detail += ". To carry more per stream, raise the TCP buffer limits on both ends (Linux: net.ipv4.tcp_rmem and tcp_wmem maximum; " +
			"Windows: receive window auto-tuning) or shorten the path."
		switch {
		case rd.cmp != nil:
			detail += fmt.Sprintf(" %s: their windows together carried more.", rd.ratioNote())
		case rd.sameHost:
			detail += " (The agent is on this machine: no network was crossed.)"
		default:
			detail += " The link itself may have room: compare with --streams 8."
		}
		return result.Finding{Code: "stream.window_limited", Severity: "warning", Summary: summary, Detail: detail,
			Values: map[string]float64{"rwnd_limited_ratio": t.RwndLimited, "sndbuf_limited_ratio": t.SndbufLimited,
				"bdp_bytes": float64(t.BDPBytes), "rtt_seconds": t.RTT.D().Seconds()}}
	case result.LimitLoss:
		p, _, split := steadyLoss(t)
		summary := fmt.Sprintf("Loss-limited: %.2f%% of the bytes were sent again (%s retransmits)", 100*t.RetransRatio, metric.FormatCount(t.Retransmits))
		if split {
			summary = fmt.Sprintf("Loss-limited: %.2f%% of the bytes were sent again after the start-up, with retransmits in %d of %d intervals", 100*p, t.SteadyLossIntervals, t.SteadyIntervals)
		}
		if rd.cmp != nil {
			summary += "; " + rd.ratioNote()
		}
		return result.Finding{Code: "stream.loss_limited", Severity: "warning",
			Summary: summary + ".",
			Detail: "TCP slows down at every loss, and one stream over a long, lossy path stays far below the link rate. " +
				"Look for a congested or faulty hop (interface errors, a policer, a duplex mismatch) before buying bandwidth.",
			Values: map[string]float64{"retransmit_ratio": t.RetransRatio, "steady_retransmit_ratio": p}}
	case result.LimitPerStream:
		return result.Finding{Code: "stream.per_stream_limited", Severity: "warning",
			Summary: fmt.Sprintf("Per-stream limit: %s, though the one stream was not held by its window (%s), loss (%s) or CPU (%s).",
				rd.ratioNote(), stalls(t), sentAgain(t), strings.TrimPrefix(rd.cpuNote(), "CPU ")),
			Detail: "Something caps each connection rather than the link: a per-flow share of a link that other traffic also uses, " +
				"one member of a bonded or ECMP path (a flow is hashed onto one), or a per-connection shaper. A replication stream gets the single-stream figure.",
			Values: map[string]float64{"aggregate_to_single_ratio": rd.cmp.Ratio, "retransmit_ratio": t.RetransRatio}}
	case result.LimitHost:
		f := result.Finding{Code: "stream.host_limited", Severity: "info",
			Summary: fmt.Sprintf("No network was crossed: the agent is on this machine, so %s is what its CPUs and memory copy through TCP, not the rate of a link (%s; %s).",
				metric.FormatBitRate(run.Throughput), stalls(t), rd.cpuNote()),
			Detail: "Run the agent on the far side (the replica, the database server) to measure the network.",
			Values: map[string]float64{"retransmit_ratio": t.RetransRatio}}
		if rd.cmp != nil {
			f.Detail = rd.ratioNote() + ". " + f.Detail
		}
		return f
	}
	f := result.Finding{Code: "stream.link_limited", Severity: "info",
		Summary: fmt.Sprintf("Link-limited: the stream filled the path (%s, %.2f%% retransmitted, %s).", stalls(t), 100*t.RetransRatio, rd.cpuNote()),
		Detail:  "Neither the window, nor loss, nor CPU held this stream back: this is the rate of the link or of a shaper on it.",
		Values:  map[string]float64{"retransmit_ratio": t.RetransRatio}}
	if rd.cmp != nil {
		f.Detail = fmt.Sprintf("%s, so this is the rate of the link or of a shaper on it, for one stream or many.", rd.ratioNote())
		if rd.stall >= WindowSome || rd.fullWindow {
			f.Detail += fmt.Sprintf(" The window stalls cost no rate: more windows carried %s (a queue on the path held what did not fit).", rd.howMuchMore())
		}
	}
	f.Detail += rd.lossNote()
	return f
}

// comparison sets N streams against one, in the words of the reading.
func (rd *reading) comparison() result.Finding {
	c := rd.cmp
	f := result.Finding{Code: "stream.parallel_comparison",
		Values: map[string]float64{"single_stream_bits_per_second": c.Single, "aggregate_bits_per_second": c.Aggregate, "aggregate_to_single_ratio": c.Ratio}}
	if c.Ratio >= Headroom {
		f.Severity = "warning"
		f.Summary = rd.ratioNote() + ": there is room that one stream cannot use."
		why := map[string]string{
			result.LimitCPU:       "one stream is one thread at each end, and more streams used more cores",
			result.LimitWindow:    "one stream is held by its window (above), and each stream brings its own",
			result.LimitLoss:      "each stream backs off at its own losses, so several recover faster together",
			result.LimitPerStream: "something caps each connection (above)",
			result.LimitHost:      "this machine has cores that one stream's two threads do not use",
			result.LimitCore:      "one stream's packets are handled on one core, and more streams' on more",
		}[rd.cause]
		if why == "" {
			why = "what holds one stream back is not the link"
		}
		f.Detail = "File copies and backups to many files use parallel streams and look fast; a replication stream cannot. Here " + why +
			". Judge replication by the single-stream figure."
		return f
	}
	f.Severity = "info"
	f.Summary = fmt.Sprintf("%s: more connections carry %s.", rd.ratioNote(), rd.howMuchMore())
	switch {
	case rd.sameHost:
		f.Detail = "On one machine its CPUs are the limit, for one stream or many; this says nothing about a network."
	case rd.cause == result.LimitCPU || rd.cause == result.LimitCore:
		f.Detail = "The machines' CPUs are the limit, for one stream or many: a faster link would not help."
	default:
		f.Detail = "One stream already gets nearly all the link gives: the link (or a shaper on it) is the limit for replication too."
	}
	return f
}

// wire accounts for the gap between payload and line rate.
func wire(run result.StreamRun, sameHost bool) (result.Finding, bool) {
	// With the agent on this machine no wire was crossed: what an
	// interface carried here says nothing of a link (say less).
	if sameHost || run.WireThroughput <= 0 || run.TCP == nil || run.TCP.MSSBytes <= 0 {
		return result.Finding{}, false
	}
	overhead := float64(run.HeaderBytes) / float64(run.TCP.MSSBytes+run.HeaderBytes)
	where, detail := "On the wire", "Payload is what a database can move; a link or shaper rate counts the headers too (and a physical Ethernet port 24 bytes more of preamble and gap per frame)."
	headers := "Ethernet/IP/TCP"
	if run.LinkHeaderBytes == 0 {
		// A TUN device (a VPN, the testbed's line) carries bare IP
		// packets: its shaper counts these, with no Ethernet header.
		where, headers = "In IP packets", "IP/TCP"
		detail = "Payload is what a database can move; this end's interface carries bare IP packets (a tunnel), and a shaper on it counts them whole. An Ethernet link further on adds 14 bytes of header a packet, and 24 of preamble and gap."
	}
	return result.Finding{Code: "stream.wire_overhead", Severity: "info",
		Summary: fmt.Sprintf("%s ≈ %s: payload %s plus %d bytes of %s headers per %d-byte segment (%.1f%%); besides, %.2f%% of the bytes were sent again.",
			where, metric.FormatBitRate(run.WireThroughput), metric.FormatBitRate(run.Throughput), run.HeaderBytes, headers, run.TCP.MSSBytes, 100*overhead, 100*run.TCP.RetransRatio),
		Detail: detail,
		Values: map[string]float64{"wire_throughput_bits_per_second": run.WireThroughput, "header_overhead_ratio": overhead}}, true
}

func rr(r *result.RR) []result.Finding {
	if r.RoundTrips == 0 {
		if f, ok := coalescing(r.Coalescing, r.Config.Queries); ok {
			return []result.Finding{f}
		}
		return nil
	}
	q := r.Config.Queries
	wireMean := float64(q) * r.Mean.D().Seconds()
	wireP99 := float64(q) * r.P99.D().Seconds()
	out := []result.Finding{{Code: "rr.wire_time", Severity: "info",
		Summary: fmt.Sprintf("A report that issues %s queries one after another spends %.2f s on round trips alone (%s each on average).",
			metric.FormatCount(q), wireMean, metric.FormatDuration(r.Mean.D())),
		Detail: fmt.Sprintf("That is before the server does any work: %s "+
			"At the p99 round trip it would be %.2f s. Fewer, larger queries (or a closer app server) are the cure; bandwidth is not.",
			ceiling(r), wireP99),
		Values: map[string]float64{"queries": float64(q), "wire_seconds": wireMean, "wire_p99_seconds": wireP99}}}
	if f, ok := tail("rr.tail", "round trips", r.Latency,
		"A chatty session feels the tail: look for CPU power saving, interrupt moderation, a busy virtual switch or a congested hop."); ok {
		out = append(out, f)
	}
	if f, ok := coalescing(r.Coalescing, r.Config.Queries); ok {
		out = append(out, f)
	}
	return out
}

// ceiling says how many round trips one session can make: what a run
// back to back made, or, for a run paced with --rate, what its mean round
// trip allows (the pace is what was asked for, not what the path allows).
func ceiling(r *result.RR) string {
	if r.Config.Rate <= 0 || r.Mean <= 0 {
		return fmt.Sprintf("%s round trips per second is the ceiling for one session on this path.", metric.FormatCount(int64(r.Rate)))
	}
	return fmt.Sprintf("the run was paced at %s round trips per second (--rate), which is the pace asked for, not a ceiling; "+
		"at its mean round trip of %s one session waiting on each could make at most about %s per second on this path "+
		"(without --rate narrows measures that ceiling itself, at the lower latency of back-to-back round trips).",
		metric.FormatCount(int64(r.Config.Rate+0.5)), metric.FormatDuration(r.Mean.D()), metric.FormatCount(int64(1/r.Mean.D().Seconds())))
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

// coreFinding says which core held the stream, at which end, split.
func (rd *reading) coreFinding() result.Finding {
	// The offloads off at each end, in the role it played.
	var off []string
	for _, h := range rd.held {
		for _, o := range h.offloadsOff() {
			off = append(off, fmt.Sprintf("%s (%s) has %s off", h.end, h.role, o))
		}
	}
	held := rd.held
	if len(held) == 2 && sameCore(held[0].load, held[1].load) {
		// Two namespaces or containers of one machine: one core, said once.
		held = []heldCore{{end: "this host and at the agent", role: "both ends' figures alike: one machine, it seems", load: held[1].load}}
	}
	var where, irqs []string
	for _, h := range held {
		l := h.load
		w := fmt.Sprintf("core %d at %s (%s) was busy %.0f%% of the run, %.0f%% of it in %s (%.0f%% system, %.0f%% user",
			l.Core, h.end, h.role, 100*l.Busy, 100*l.Packet(), l.PacketWork(), 100*l.System, 100*l.User)
		if l.Steal >= 0.05 {
			w += fmt.Sprintf(", %.0f%% taken by the hypervisor", 100*l.Steal)
		}
		w += fmt.Sprintf("; its other cores %.0f%% busy on average", 100*l.OthersBusy)
		if cpb := cyclesPerByte(l, rd.run); cpb > 0 {
			w += fmt.Sprintf("; %.1f of its cycles a byte received, at %.0f MHz", cpb, l.MHz)
		}
		w += ")"
		where = append(where, w)
		for _, q := range l.NICInterrupts {
			irqs = append(irqs, fmt.Sprintf("%s a second from %s's %s (IRQ %d)", metric.FormatCount(int64(q.PerSecond)), l.NIC, q.Name, q.IRQ))
		}
	}
	// Where the core and the NIC sit, for each end that was full.
	var place []string
	for _, h := range rd.held {
		place = append(place, h.placement()...)
	}
	first := held[0].load
	f := result.Finding{Code: "stream.packet_core_limited", Severity: "warning",
		Summary: fmt.Sprintf("Core-limited: %s: that core, not the link, set this stream's %s.", strings.Join(where, "; "), metric.FormatBitRate(rd.run.Throughput)),
		Detail: "One stream's packets are handled on one core at a time, whatever the NIC's queues: a flow hashes to one receive queue, whose interrupt and the protocol work after it land on one CPU, " +
			"and a replica's log is one stream. A faster link would not raise this rate. What lightens that core: larger packets where the path carries them (jumbo frames), " +
			"the NIC's offloads on (receive GRO/LRO, send TSO/GSO: ethtool -k on Linux, the adapter's Large Send and Receive Segment Coalescing on Windows), " +
			"interrupt coalescing, the protocol work steered to another core (RPS/RFS on Linux, RSS on Windows), the database's busiest threads kept off it, and a faster core. " +
			"How much each gives cannot be told from these counters: the core's packet work is the sending and the receiving both; change one and measure again " +
			"(narrows net stream --try-rps moves the receiving end's protocol work off its busiest core for one run, and puts it back).",
		Values: map[string]float64{"core": float64(first.Core), "core_busy_share": first.Busy, "core_packet_share": first.Packet()}}
	if len(irqs) > 0 {
		f.Detail = "The full core took the NIC's interrupts: " + strings.Join(irqs, "; ") +
			". Moving them to a core with room (its /proc/irq/N/smp_affinity_list, or irqbalance), or the protocol work after them (RPS), leaves this core the rest. " + f.Detail
	}
	if len(off) > 0 {
		f.Detail = "The offloads are off where this stream's packets were handled: " + strings.Join(off, "; ") +
			". Without them the stack makes, or takes apart, every packet at the MTU's size: turn them on first (ethtool -K DEVICE tso on gso on gro on) and measure again " +
			"(narrows net stream --try-offloads turns them on at both ends for one run, and off again). " + f.Detail
	}
	if len(place) > 0 {
		f.Detail += " " + strings.Join(place, " ")
	}
	if rd.cmp != nil {
		f.Detail = rd.ratioNote() + ". " + f.Detail
	}
	return f
}

// placement says where the end's full core and its NIC sit, when it
// matters: the core on another NUMA node than the NIC (each packet's
// data crosses between the nodes), and a NIC that is not a physical
// port (words.NICKind).
func (h heldCore) placement() []string {
	l := h.load
	var out []string
	if n := l.NUMA; n != nil && n.NICNode >= 0 && n.NICNode != n.CoreNode {
		out = append(out, fmt.Sprintf("At %s, core %d is on NUMA node %d and %s on node %d (of %d): each packet's data crosses between the nodes; "+
			"the NIC's interrupts and the database's network threads on node %d's cores keep it local.", h.end, l.Core, n.CoreNode, l.NIC, n.NICNode, n.Nodes, n.NICNode))
	}
	if h.facts != nil {
		for _, nic := range h.facts.Interfaces {
			if k := words.NICKind(nic.Driver); nic.Name == l.NIC && k != "" {
				out = append(out, fmt.Sprintf("At %s, %s is %s.", h.end, nic.Name, k))
			}
		}
	}
	return out
}

// cyclesPerByte is what the core spent on each byte the run received:
// its busy share of the run in cycles at its reported clock; 0 where
// the clock or the bytes are not known.
func cyclesPerByte(l *result.CoreLoad, run result.StreamRun) float64 {
	if l.MHz <= 0 || run.ReceivedBytes <= 0 || run.Duration <= 0 {
		return 0
	}
	return l.Busy * run.Duration.D().Seconds() * l.MHz * 1e6 / float64(run.ReceivedBytes)
}

// sameCore: two ends' busiest cores read alike, the one core of one
// machine counted twice over nearly the same seconds.
func sameCore(a, b *result.CoreLoad) bool {
	return a.OS == b.OS && a.Cores == b.Cores && a.Core == b.Core &&
		math.Abs(a.Busy-b.Busy) < 0.02 && math.Abs(a.Packet()-b.Packet()) < 0.02 && math.Abs(a.System-b.System) < 0.02
}
