package advisor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// A replica keeps up while one stream carries the log as fast as the
// primary writes it: PostgreSQL's walsender, a MySQL binary log dump
// thread, and SQL Server's one send per database and replica each ship
// over one TCP connection. The model sets the log rate (mean, and a peak
// held for the planned peak's duration) against that one stream's
// capacity; with several databases (SQL Server), each against one stream
// and their sum against the link. A stream at another RTT is bounded by
// its window (window ÷ RTT), by loss (Mathis et al.) and by the link
// (unchanged), whichever is least.

// ReplicaInput is what a replica plan is asked.
type ReplicaInput struct {
	Engine string
	// Log is one rate per stream: per database for SQL Server, one for
	// the server otherwise.
	Log    []result.LogRate
	Stream result.ReplicaStream
	// PeakDuration is how long the peak lasts; 0 is DefaultPeak.
	PeakDuration time.Duration
	// RTT asks what the plan would be at this RTT (a farther site); 0:
	// no such what-if.
	RTT time.Duration
	// LogFactor multiplies the log rate in a what-if; 0 is
	// DefaultLogFactor, 1 or less none.
	LogFactor float64
	// Notes are what the log's reading said of itself.
	Notes []string
}

// Constants of the model.
const (
	DefaultPeak      = 10 * time.Minute
	DefaultLogFactor = 2.0
	// WindowMargin is the window planned over the bandwidth-delay
	// product: a stream whose rate × RTT reaches FullWindow (0.85) of its
	// window is window-bound already, and the RTT under load exceeds the
	// path's minimum.
	WindowMargin = 1.25
	// PayloadRatio is the share of a socket buffer the kernel advertises
	// as window. Up to Linux 6.5 it was half (tcp_adv_win_scale = 1);
	// since 6.6 the kernel measures it per connection (0.62 on the
	// testbed's path, docs/testbed.md experiment 1): a half errs safe.
	PayloadRatio = 0.5
	// MathisC is the constant of Mathis et al.'s bound, √(3/2).
	MathisC = 1.22
	// Linux's default buffer maxima (net.ipv4.tcp_rmem and tcp_wmem).
	LinuxRmemDefault = 6 << 20
	LinuxWmemDefault = 4 << 20
	// WindowsNormal is the largest window Windows' default receive
	// window auto-tuning level ("normal", window scale 8) advertises.
	WindowsNormal = 16 << 20
)

// PlanReplica composes the plan. It fails only on a question it cannot
// answer: no log rate, or no stream capacity.
func PlanReplica(in ReplicaInput) (result.ReplicaPlan, error) {
	p := result.ReplicaPlan{Engine: in.Engine, Log: in.Log, Stream: in.Stream, Cases: []result.ReplicaCase{},
		WhatIfs: []result.ReplicaWhatIf{}, Notes: []string{}}
	if len(in.Log) == 0 {
		return p, errors.New("no log rate: measure it on the primary (--dsn), or give it (--log-rate)")
	}
	for _, l := range in.Log {
		if l.Mean < 0 || l.Peak < 0 || math.IsNaN(l.Mean) || math.IsNaN(l.Peak) || math.IsInf(l.Mean, 0) || math.IsInf(l.Peak, 0) {
			return p, fmt.Errorf("log rate of %s: %v mean, %v peak: not a rate", dbName(l.Database), l.Mean, l.Peak)
		}
	}
	s := in.Stream
	if !(s.Capacity > 0) || math.IsInf(s.Capacity, 0) {
		return p, errors.New("no single-stream capacity: measure it through an agent on the replica's host (--to), or give it (--assume stream=2MB/s)")
	}
	if s.LimitedBy == "" {
		s.LimitedBy = result.LimitUnknown
		p.Stream.LimitedBy = s.LimitedBy
	}
	peakFor := in.PeakDuration
	if peakFor <= 0 {
		peakFor = DefaultPeak
	}
	p.PeakDuration = result.Seconds(peakFor)
	p.Cases, p.Link = replicaCases(in.Log, 1, s.Capacity, linkRate(s), peakFor)
	p.Verdict = worst(p.Cases, p.Link)
	p.Window = replicaWindow(p.Cases, s)
	p.Notes = append(p.Notes, replicaNotes(in, s, p)...)
	p.Notes = append(p.Notes, in.Notes...)
	if why := idleLog(in.Log); why != "" {
		// A replica "keeps up" with a primary that wrote nothing, and the
		// margin is any: true of the watch, and no answer to the question,
		// which is about the workload. No verdict, no what-if of a
		// multiple of nothing.
		p.Verdict, p.CannotJudge = result.VerdictCannotJudge, why
		p.Window = result.ReplicaWindow{} // no settings for a peak of nothing
		for i := range p.Cases {
			p.Cases[i].Verdict = result.VerdictCannotJudge
		}
		if p.Link != nil {
			p.Link.Verdict = result.VerdictCannotJudge
		}
		return p, nil
	}

	if in.RTT > 0 {
		if w, note := rttWhatIf(in.Log, s, in.RTT, peakFor); note != "" {
			p.Notes = append(p.Notes, note)
		} else {
			p.WhatIfs = append(p.WhatIfs, w)
		}
	}
	factor := in.LogFactor
	if factor == 0 {
		factor = DefaultLogFactor
	}
	if factor > 1 {
		w := result.ReplicaWhatIf{What: "log ×" + trimRatio(factor), RTT: rttOf(s), LogFactor: factor, Capacity: s.Capacity,
			LimitedBy: s.LimitedBy, Bounds: []result.ReplicaBound{}}
		w.Cases, w.Link = replicaCases(in.Log, factor, s.Capacity, linkRate(s), peakFor)
		w.Verdict = worst(w.Cases, w.Link)
		p.WhatIfs = append(p.WhatIfs, w)
	}
	return p, nil
}

// IdleLogPeak is the busiest second of log below which a watched primary
// is too idle to judge a replica by: 16 kB/s, about two 8 KiB WAL pages a
// second (a round figure, as it is printed). An
// idle PostgreSQL writes a few bytes a second (a running-transactions
// record every 15 s, a checkpoint's now and then), an idle MySQL nothing;
// the lightest real workload writes tens of KB a second.
const IdleLogPeak = 16e3

// idleLog says why the log cannot be judged by, "" when it can: a rate of
// 0 given by hand, or a watch whose busiest second stayed under
// IdleLogPeak. A rate given by hand above 0 is the person's to give.
func idleLog(logs []result.LogRate) string {
	var peak, mean float64
	var bytes int64
	var watch result.Seconds
	measured := false
	for _, l := range logs {
		peak += l.Peak
		mean += l.Mean
		bytes += l.Bytes
		watch = max(watch, l.Watch)
		measured = measured || l.Source != "assumed"
	}
	switch {
	case peak <= 0 && !measured:
		return "cannot judge: a log rate of 0 was given: give the busy hour's rate (--log-rate MEAN,PEAK, e.g. 3MB/s,8MB/s)"
	case !measured || peak >= IdleLogPeak:
		return ""
	}
	wrote := "wrote log at " + metric.FormatByteRate(mean) + " on average"
	if watch > 0 {
		wrote = fmt.Sprintf("wrote only %s of log in %s", metric.FormatDecimalBytes(bytes), metric.FormatDuration(watch.D()))
	}
	return fmt.Sprintf("cannot judge: the primary %s (its busiest second %s, under %s): too idle to judge a replica by; run plan replica while the workload runs (--dsn with a --watch over its busy time), or give the busy hour's rate (--log-rate MEAN,PEAK)",
		wrote, metric.FormatByteRate(peak), metric.FormatByteRate(IdleLogPeak))
}

func dbName(db string) string {
	if db == "" {
		return "the server"
	}
	return db
}

func trimRatio(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}

// rttOf is the path's RTT as the stream saw it: its minimum, else its
// smoothed RTT.
func rttOf(s result.ReplicaStream) result.Seconds {
	if s.MinRTT > 0 {
		return s.MinRTT
	}
	return s.RTT
}

// linkRate is what the link carries for all streams together, 0 when not
// known: N streams' figure, or one stream's when nothing but the link (or
// a shaper, or the machine) held it.
func linkRate(s result.ReplicaStream) float64 {
	switch {
	case s.Link > 0:
		return max(s.Link, s.Capacity)
	case s.LimitedBy == result.LimitLink || s.LimitedBy == result.LimitHost:
		return s.Capacity
	}
	return 0
}

// ReplicaCase sets one stream's log rate against its capacity, for a
// peak of peakFor.
func ReplicaCase(db string, mean, peak, capacity float64, peakFor time.Duration) result.ReplicaCase {
	c := result.ReplicaCase{Database: db, Mean: mean, Peak: peak, Capacity: capacity}
	if mean > 0 {
		h := capacity / mean
		c.HeadroomMean = &h
	}
	if peak > 0 {
		h := capacity / peak
		c.HeadroomPeak = &h
	}
	switch {
	case peak <= capacity:
		c.Verdict = result.VerdictKeepsUp
	case mean <= capacity:
		c.Verdict = result.VerdictFallsBehindAtPeak
	default:
		c.Verdict = result.VerdictFallsBehind
	}
	c.Growth = max(peak-capacity, 0)
	c.GrowthMean = max(mean-capacity, 0)
	c.RPOBytes = int64(math.Round(c.Growth * peakFor.Seconds()))
	if peak > 0 {
		// The oldest unsent byte at the end of the peak was written when
		// the sender had sent what it could: its age is bytes ÷ peak.
		c.RPOSeconds = float64(c.RPOBytes) / peak
	}
	switch {
	case c.RPOBytes == 0:
		zero := 0.0
		c.CatchUp = &zero
	case capacity > mean:
		t := float64(c.RPOBytes) / (capacity - mean)
		c.CatchUp = &t
	default:
		c.CatchUpNever = true
	}
	return c
}

// replicaCases plans each stream, and the link for their sum when there
// are several and the link is known. The sum's peak is the highest sum of
// the same intervals when every database was sampled together (the
// peaks need not coincide), else the sum of the peaks.
func replicaCases(logs []result.LogRate, factor, capacity, link float64, peakFor time.Duration) ([]result.ReplicaCase, *result.ReplicaCase) {
	cases := make([]result.ReplicaCase, 0, len(logs))
	var mean, peak float64
	for _, l := range logs {
		cases = append(cases, ReplicaCase(l.Database, l.Mean*factor, l.Peak*factor, capacity, peakFor))
		mean += l.Mean * factor
		peak += l.Peak * factor
	}
	if len(logs) < 2 || link <= 0 {
		return cases, nil
	}
	if together := peakTogether(logs); together > 0 {
		peak = together * factor
	}
	c := ReplicaCase("", mean, peak, link, peakFor)
	return cases, &c
}

// peakTogether is the highest sum of the databases' rates over the same
// interval, 0 unless every database has samples of the same intervals.
func peakTogether(logs []result.LogRate) float64 {
	n := len(logs[0].Samples)
	for _, l := range logs {
		if len(l.Samples) != n || n == 0 || l.Interval != logs[0].Interval {
			return 0
		}
	}
	best := 0.0
	for i := range n {
		sum := 0.0
		for _, l := range logs {
			sum += l.Samples[i]
		}
		best = max(best, sum)
	}
	return best
}

var verdictRank = map[string]int{result.VerdictKeepsUp: 0, result.VerdictFallsBehindAtPeak: 1, result.VerdictFallsBehind: 2}

func worst(cases []result.ReplicaCase, link *result.ReplicaCase) string {
	v := result.VerdictKeepsUp
	all := slices.Clone(cases)
	if link != nil {
		all = append(all, *link)
	}
	for _, c := range all {
		if verdictRank[c.Verdict] > verdictRank[v] {
			v = c.Verdict
		}
	}
	return v
}

// replicaWindow is the window the busiest stream needs for its peak at
// the path's RTT, and the settings that give it.
func replicaWindow(cases []result.ReplicaCase, s result.ReplicaStream) result.ReplicaWindow {
	w := result.ReplicaWindow{Margin: WindowMargin, PayloadRatio: PayloadRatio, RTT: rttOf(s),
		ReceiverRmemMax: s.ReceiverRmemMax, SenderWmemMax: s.SenderWmemMax}
	for _, c := range cases {
		w.Rate = max(w.Rate, c.Peak)
	}
	w.BDP = int64(math.Ceil(w.Rate * w.RTT.D().Seconds()))
	w.Needed = int64(math.Ceil(float64(w.BDP) * WindowMargin))
	w.Buffer = roundBuffer(int64(math.Ceil(float64(w.Needed) / PayloadRatio)))
	w.WindowsLevel = WindowsLevel(w.Needed)
	w.Tuning = []result.Tuning{}
	for _, e := range []BufferEnd{
		{Host: "the replica's host", OS: s.ReceiverOS, Key: "net.ipv4.tcp_rmem", Max: s.ReceiverRmemMax, Low: s.ReceiverRmemLow, Receiver: true},
		{Host: "the primary", OS: s.SenderOS, Key: "net.ipv4.tcp_wmem", Max: s.SenderWmemMax, Low: s.SenderWmemLow},
	} {
		if t, ok := Tune(e, w.Buffer, w.Needed); ok {
			w.Tuning = append(w.Tuning, t)
		}
		if e.Receiver && e.OS == "" && e.Max <= 0 {
			// A receiver not measured may be a Windows host (a SQL
			// Server secondary): its setting too, to be read there.
			e.OS = "windows"
			t, _ := Tune(e, w.Buffer, w.Needed)
			w.Tuning = append(w.Tuning, t)
		}
	}
	if s.ReceiverRmemMax > 0 {
		ok := s.ReceiverRmemMax >= w.Buffer
		w.ReceiverEnough = &ok
	}
	if s.SenderWmemMax > 0 {
		ok := s.SenderWmemMax >= w.Buffer
		w.SenderEnough = &ok
	}
	return w
}

// roundBuffer rounds a buffer size up to a whole MiB (to 64 KiB below one).
func roundBuffer(n int64) int64 {
	step := int64(1 << 20)
	if n < step {
		step = 64 << 10
	}
	return (n + step - 1) / step * step
}

// windowAt is the window a stream would have on a path of another RTT:
// the one it had when the window held it (its peer's advertised window,
// else the bytes it kept in flight), otherwise the most autotuning may
// grow to: the smaller of the receiver's tcp_rmem and the sender's
// tcp_wmem maximum, times PayloadRatio.
func windowAt(s result.ReplicaStream) (int64, string) {
	inFlight := int64(s.Capacity * s.RTT.D().Seconds())
	if s.RTT <= 0 {
		inFlight = int64(s.Capacity * s.MinRTT.D().Seconds())
	}
	switch s.LimitedBy {
	case result.LimitWindow:
		if s.PeerWindow > 0 {
			return s.PeerWindow, "the window the stream had (the replica host's advertised window)"
		}
		return inFlight, "the bytes the stream kept in flight (capacity × RTT): its window"
	case result.LimitUnknown:
		return inFlight, "the bytes the stream kept in flight (capacity × RTT): what held it is not known, so no more is assumed"
	}
	recv, recvFrom := int64(0), ""
	switch {
	case s.ReceiverRmemMax > 0:
		recv = int64(float64(s.ReceiverRmemMax) * PayloadRatio)
		recvFrom = fmt.Sprintf("the replica host's tcp_rmem maximum %s × %.1f", metric.FormatBytes(s.ReceiverRmemMax), PayloadRatio)
	case s.ReceiverOS == "windows":
		recv, recvFrom = WindowsNormal, "Windows' receive window auto-tuning at its default level, normal (16 MiB)"
	default:
		recv = int64(LinuxRmemDefault * PayloadRatio)
		recvFrom = fmt.Sprintf("the Linux default tcp_rmem maximum %s × %.1f (the replica host's was not told)", metric.FormatBytes(LinuxRmemDefault), PayloadRatio)
	}
	send, sendFrom := int64(LinuxWmemDefault*PayloadRatio), fmt.Sprintf("the Linux default tcp_wmem maximum %s × %.1f on the primary (not known)", metric.FormatBytes(LinuxWmemDefault), PayloadRatio)
	if s.SenderWmemMax > 0 {
		send = int64(float64(s.SenderWmemMax) * PayloadRatio)
		sendFrom = fmt.Sprintf("the primary's tcp_wmem maximum %s × %.1f", metric.FormatBytes(s.SenderWmemMax), PayloadRatio)
	}
	// The stream was not window-bound at its own RTT: its window was at
	// least what it kept in flight.
	if send < recv {
		return max(send, inFlight), "the most autotuning gives it: " + sendFrom + " (the sender's side is the smaller)"
	}
	return max(recv, inFlight), "the most autotuning gives it: " + recvFrom
}

// Mathis is Mathis et al.'s bound on a loss-limited TCP stream:
// MSS ÷ (RTT × √p) × C.
func Mathis(mss int64, rtt time.Duration, p float64) float64 {
	if mss <= 0 || rtt <= 0 || p <= 0 {
		return math.Inf(1)
	}
	return float64(mss) / (rtt.Seconds() * math.Sqrt(p)) * MathisC
}

// rttWhatIf plans the same log over one stream at another RTT. It returns
// a note instead when the stream's figures cannot tell.
func rttWhatIf(logs []result.LogRate, s result.ReplicaStream, rtt, peakFor time.Duration) (result.ReplicaWhatIf, string) {
	w := result.ReplicaWhatIf{What: "rtt " + metric.FormatDuration(rtt), RTT: result.Seconds(rtt), Bounds: []result.ReplicaBound{}}
	if s.RTT <= 0 && s.MinRTT <= 0 {
		return w, fmt.Sprintf("No RTT was measured or given, so the plan at %s cannot be made: give the path's (--assume rtt=40ms).", metric.FormatDuration(rtt))
	}
	win, from := windowAt(s)
	w.Window, w.WindowFrom = win, from
	w.Bounds = append(w.Bounds, result.ReplicaBound{Limit: result.LimitWindow, Capacity: float64(win) / rtt.Seconds(), Applies: true,
		Formula: fmt.Sprintf("window ÷ RTT = %s ÷ %s = %s, the window being %s",
			metric.FormatCount(win)+" B", metric.FormatDuration(rtt), metric.FormatByteRate(float64(win)/rtt.Seconds()), from)})
	if s.Retransmits > 0 && s.RetransRatio > 0 && s.MSS > 0 {
		at := Mathis(s.MSS, rtt, s.RetransRatio)
		b := result.ReplicaBound{Limit: result.LimitLoss, Capacity: at, Applies: true,
			Formula: fmt.Sprintf("Mathis et al.: rate ≤ MSS ÷ (RTT × √p) × C = %d B ÷ (%s × √%.4g) × %.2f = %s, p being the share of bytes sent again (%.3g%%), as if the loss stays the same on the longer path",
				s.MSS, metric.FormatDuration(rtt), s.RetransRatio, MathisC, metric.FormatByteRate(at), 100*s.RetransRatio)}
		measuredRTT := s.RTT.D()
		if measuredRTT <= 0 {
			measuredRTT = s.MinRTT.D()
		}
		if here := Mathis(s.MSS, measuredRTT, s.RetransRatio); s.Capacity > here {
			b.Applies = false
			b.Formula += fmt.Sprintf("; not applied: the stream carried %s at %s where the formula allows %s, so its losses were not the random loss it models (a queue it filled itself)",
				metric.FormatByteRate(s.Capacity), metric.FormatDuration(measuredRTT), metric.FormatByteRate(here))
		}
		w.Bounds = append(w.Bounds, b)
	}
	if link := linkRate(s); link > 0 {
		what := "what one stream carried, nothing else holding it"
		switch {
		case s.Link > 0 && s.LinkStreams > 0:
			what = fmt.Sprintf("what %d streams carried", s.LinkStreams)
		case s.Link > 0:
			what = "the link's rate"
		}
		w.Bounds = append(w.Bounds, result.ReplicaBound{Limit: result.LimitLink, Capacity: link, Applies: true,
			Formula: fmt.Sprintf("link: unchanged, %s = %s", what, metric.FormatByteRate(link))})
	}
	switch s.LimitedBy {
	case result.LimitCPU, result.LimitCore, result.LimitPerStream:
		what := map[string]string{result.LimitCPU: "one core at each end", result.LimitCore: "one core's packet work at an end",
			result.LimitPerStream: "a per-connection limit on the path"}[s.LimitedBy]
		w.Bounds = append(w.Bounds, result.ReplicaBound{Limit: s.LimitedBy, Capacity: s.Capacity, Applies: true,
			Formula: fmt.Sprintf("%s: unchanged, %s held it to %s", s.LimitedBy, what, metric.FormatByteRate(s.Capacity))})
	}
	w.Capacity = math.Inf(1)
	for _, b := range w.Bounds {
		if b.Applies && b.Capacity < w.Capacity {
			w.Capacity, w.LimitedBy = b.Capacity, b.Limit
		}
	}
	w.Cases, w.Link = replicaCases(logs, 1, w.Capacity, linkRate(s), peakFor)
	w.Verdict = worst(w.Cases, w.Link)
	return w, ""
}

// replicaNotes are the model's assumptions, in words.
func replicaNotes(in ReplicaInput, s result.ReplicaStream, p result.ReplicaPlan) []string {
	var n []string
	switch in.Engine {
	case "postgres":
		n = append(n, "PostgreSQL ships the whole cluster's WAL to each standby over one walsender connection: one stream per standby.")
	case "mysql":
		n = append(n, "MySQL and MariaDB ship the binary log to each replica over one connection (the replica's IO thread): one stream per replica. "+
			"The rate is in binary log bytes; MariaDB's default Annotate_rows events are not shipped to a replica that does not ask for them, so the wire may carry less (docs/testbed.md).")
	case "sqlserver":
		n = append(n, "SQL Server sends each database's log to each secondary over its own stream: one stream per database and replica, and their sum shares the link. Plan each secondary's site on its own.")
	}
	if len(in.Log) > 1 && p.Link == nil {
		n = append(n, "The link was not measured (--streams with --to, or --assume link=RATE): the streams' sum is not set against it.")
	}
	peakFor := time.Duration(p.PeakDuration)
	n = append(n, fmt.Sprintf("The peak is planned to hold for %s (--peak): the highest one-second rate held that long is the worst case.", metric.FormatHours(peakFor.Seconds())))
	if s.SameHost {
		n = append(n, "The agent ran on this machine: the capacity is what its CPUs copy through TCP, not a network's. Run the agent on the replica's host.")
	}
	return n
}

// replicaPlan turns a plan into findings: the verdict with its margin,
// the link, the window and settings, and the what-ifs.
func replicaPlan(p *result.ReplicaPlan) []result.Finding {
	if len(p.Cases) == 0 {
		return nil
	}
	if p.Verdict == result.VerdictCannotJudge {
		why := p.CannotJudge
		if why == "" {
			why = "cannot judge: the log is too idle to judge a replica by"
		}
		return []result.Finding{{Code: "plan.replica_cannot_judge", Severity: "warning",
			Summary: strings.ToUpper(why[:1]) + why[1:] + ".",
			Values:  map[string]float64{"log_peak_bytes_per_second": busiest(p.Cases).Peak, "capacity_bytes_per_second": p.Stream.Capacity}}}
	}
	var out []result.Finding
	c := busiest(p.Cases)
	out = append(out, caseFinding("plan.replica_"+c.Verdict, c, p.PeakDuration.D(), p.Stream.LimitedBy, ""))
	if l := p.Link; l != nil && l.Verdict != result.VerdictKeepsUp {
		out = append(out, caseFinding("plan.replica_link_"+l.Verdict, *l, p.PeakDuration.D(), result.LimitLink, "the link"))
	}
	if f, ok := windowFinding(p); ok {
		out = append(out, f)
	}
	for _, w := range p.WhatIfs {
		out = append(out, whatIfFinding(p, w))
	}
	return out
}

// busiest is the case with the worst verdict, the highest peak among
// those (the zero case when there are none).
func busiest(cases []result.ReplicaCase) result.ReplicaCase {
	var c result.ReplicaCase
	for i, x := range cases {
		if i == 0 || verdictRank[x.Verdict] > verdictRank[c.Verdict] || verdictRank[x.Verdict] == verdictRank[c.Verdict] && x.Peak > c.Peak {
			c = x
		}
	}
	return c
}

// caseFinding words one case; carrier is what carries its log: "" for
// one stream, "the link" for the databases' streams together (where "one
// stream's 2.50 MB/s" was the link's figure, and "The replica" all of
// them).
func caseFinding(code string, c result.ReplicaCase, peakFor time.Duration, limit, carrier string) result.Finding {
	// The subject and its verbs: one replica, or the replicas together.
	who, carries, s, it := "The replica", "one stream", "s", "it generates"
	if c.Database != "" {
		who = "Database " + c.Database
	}
	if carrier != "" {
		who, carries, s, it = "The databases' replicas together", carrier, "", "they generate"
	}
	v := map[string]float64{"log_mean_bytes_per_second": c.Mean, "log_peak_bytes_per_second": c.Peak, "capacity_bytes_per_second": c.Capacity,
		"send_queue_growth_bytes_per_second": c.Growth, "rpo_bytes": float64(c.RPOBytes), "rpo_seconds": c.RPOSeconds}
	if c.HeadroomMean != nil {
		v["headroom_at_mean_ratio"] = *c.HeadroomMean
	}
	if c.HeadroomPeak != nil {
		v["headroom_at_peak_ratio"] = *c.HeadroomPeak
	}
	f := result.Finding{Code: code, Values: v}
	switch c.Verdict {
	case result.VerdictKeepsUp:
		f.Severity = "info"
		f.Summary = fmt.Sprintf("%s keep%s up: %s carries %s%s.",
			who, s, carries, metric.FormatByteRate(c.Capacity), times(c.HeadroomPeak, " the peak of "+metric.FormatByteRate(c.Peak))+parens(times(c.HeadroomMean, " the mean")))
	case result.VerdictFallsBehindAtPeak:
		f.Severity = "warning"
		f.Summary = fmt.Sprintf("%s fall%s behind at the peak: %s of log against %s for %s, the send queue growing %s; after %s the RPO is %s (%s of log), caught up %s later at the mean rate.",
			who, s, metric.FormatByteRate(c.Peak), metric.FormatByteRate(c.Capacity), carries, metric.FormatByteRate(c.Growth), metric.FormatHours(peakFor.Seconds()),
			metric.FormatDecimalBytes(c.RPOBytes), metric.FormatHours(c.RPOSeconds), metric.FormatHours(*c.CatchUp))
		v["catch_up_seconds"] = *c.CatchUp
	default:
		f.Severity = "warning"
		f.Summary = fmt.Sprintf("%s fall%s behind: %s %s of log on average, more than %s's %s; the send queue, the data a failover loses, grows %s for as long as the load lasts (%s at the peak) and never catches up.",
			who, s, it, metric.FormatByteRate(c.Mean), carries, metric.FormatByteRate(c.Capacity), metric.FormatByteRate(c.GrowthMean), metric.FormatByteRate(c.Growth))
		v["send_queue_growth_at_mean_bytes_per_second"] = c.GrowthMean
	}
	f.Detail = limitAdvice(limit)
	return f
}

// times words a headroom with what it is of, ", 1.43× the peak of 5 MB/s";
// "" when there is none (a rate of 0: no ratio to it is a figure), so a
// sentence drops the clause rather than print a word for infinity.
func times(h *float64, of string) string {
	if h == nil || math.IsInf(*h, 0) || math.IsNaN(*h) {
		return ""
	}
	return fmt.Sprintf(", %.2f×%s", *h, of)
}

// parens puts a clause of times in parentheses: " (2.10× the mean)".
func parens(clause string) string {
	if clause == "" {
		return ""
	}
	return " (" + strings.TrimPrefix(clause, ", ") + ")"
}

// headroomAtPeak is ": headroom 1.43× at the peak", "" without a figure.
func headroomAtPeak(h *float64) string {
	if times(h, "") == "" {
		return ""
	}
	return fmt.Sprintf(": headroom %.2f× at the peak", *h)
}

func limitAdvice(limit string) string {
	switch limit {
	case result.LimitWindow:
		return "The stream is held by its window: larger TCP buffers on both ends (below) raise it, as would a shorter path; a faster link would not."
	case result.LimitLoss:
		return "The stream is held by loss: find the congested or faulty hop before buying bandwidth."
	case result.LimitCPU:
		return "The stream is held by one core at an end: a faster link would not help."
	case result.LimitCore:
		return "The stream is held by one core's packet work at an end (the stream's verdict names it): a faster link would not help; the offloads, the NIC's interrupts or RPS off that core, or jumbo frames would."
	case result.LimitLink:
		return "The stream fills the link: only a faster link (or less log: compression, fewer writes) gives more."
	case result.LimitHost:
		return "No network was crossed: run the agent on the replica's host to plan for the real path."
	case result.LimitPerStream:
		return "Something caps each connection on the path (a per-flow shaper, one member of a bonded or ECMP path): more streams carry more, a replica cannot use them."
	}
	return "What holds the stream is not known (no TCP figures): measure it with --to on Linux."
}

func windowFinding(p *result.ReplicaPlan) (result.Finding, bool) {
	w := p.Window
	if w.BDP <= 0 {
		return result.Finding{}, false
	}
	windows := "normal (the default)"
	if w.WindowsLevel != "normal" {
		windows = w.WindowsLevel
	}
	f := result.Finding{Code: "plan.replica_window", Severity: "info",
		Summary: fmt.Sprintf("For its peak of %s at %s, a stream keeps %s in flight; with %.2f× margin it needs a %s window: tcp_rmem (replica) and tcp_wmem (primary) maximum at least %s; Windows receive window auto-tuning %s.",
			metric.FormatByteRate(w.Rate), metric.FormatDuration(w.RTT.D()), metric.FormatDecimalBytes(w.BDP), w.Margin, metric.FormatDecimalBytes(w.Needed),
			metric.FormatBytes(w.Buffer), windows),
		Values: map[string]float64{"bdp_bytes": float64(w.BDP), "window_bytes": float64(w.Needed), "buffer_bytes": float64(w.Buffer)}}
	var short, unknown []string
	for _, t := range w.Tuning {
		switch t.Status {
		case result.TuningRaise:
			short = append(short, fmt.Sprintf("%s allows %s; raise it: %s", t.Host, metric.FormatBytes(t.CurrentMax), t.Command))
		case result.TuningUnknown:
			unknown = append(unknown, t.Host+": "+words.Tuning(t))
		}
	}
	var detail []string
	if len(short) > 0 {
		f.Severity = "warning"
		detail = append(detail, "Too small: "+strings.Join(short, "; ")+". A buffer the kernel may grow to costs memory only while a stream uses it.")
	}
	if len(unknown) > 0 {
		detail = append(detail, strings.Join(unknown, "; ")+".")
	}
	if len(short) == 0 && len(unknown) == 0 && p.Stream.LimitedBy == result.LimitWindow && p.Verdict != result.VerdictKeepsUp {
		// The maxima allow the window, yet the stream was held by one:
		// something below them fixed it, and raising them changes nothing.
		f.Severity = "warning"
		detail = append(detail, fmt.Sprintf("The stream was held by its window (%s) though both ends' maxima allow the %s it needs: a fixed socket buffer "+
			"(SO_RCVBUF or SO_SNDBUF set by the application, or --window) or a window clamp on the path held it. Measure again without --window.",
			metric.FormatCount(p.Stream.PeerWindow)+" B", metric.FormatBytes(w.Buffer)))
	}
	f.Detail = strings.Join(detail, " ")
	return f, true
}

func whatIfFinding(p *result.ReplicaPlan, w result.ReplicaWhatIf) result.Finding {
	worstCase := busiest(w.Cases)
	verdict := map[string]string{result.VerdictKeepsUp: "keeps up", result.VerdictFallsBehindAtPeak: "falls behind at the peak", result.VerdictFallsBehind: "falls behind"}[w.Verdict]
	// Its code says which what-if it is: plan.replica_log_factor or
	// plan.replica_rtt, set below.
	f := result.Finding{Severity: "info",
		Values: map[string]float64{"capacity_bytes_per_second": w.Capacity, "rtt_seconds": w.RTT.D().Seconds(),
			"send_queue_growth_bytes_per_second": worstCase.Growth, "rpo_bytes": float64(worstCase.RPOBytes)}}
	if worstCase.HeadroomPeak != nil {
		f.Values["headroom_at_peak_ratio"] = *worstCase.HeadroomPeak
	}
	if verdictRank[w.Verdict] > verdictRank[p.Verdict] {
		f.Severity = "warning"
	}
	if w.LogFactor > 0 {
		f.Code = "plan.replica_log_factor"
		f.Summary = fmt.Sprintf("With %s× the log (%s at the peak), the replica %s%s.",
			trimRatio(w.LogFactor), metric.FormatByteRate(worstCase.Peak), verdict, headroomAtPeak(worstCase.HeadroomPeak))
		f.Values["log_factor"] = w.LogFactor
		return f
	}
	f.Code = "plan.replica_rtt"
	f.Summary = fmt.Sprintf("At %s RTT one stream would carry %s (limited by %s), and the replica %s%s.",
		metric.FormatDuration(w.RTT.D()), metric.FormatByteRate(w.Capacity), w.LimitedBy, verdict, headroomAtPeak(worstCase.HeadroomPeak))
	var formulas []string
	for _, b := range w.Bounds {
		formulas = append(formulas, b.Formula)
	}
	f.Detail = "The least of: " + strings.Join(formulas, "; ") + "."
	return f
}

// ReplicaStreamOf reads a `net stream` run as a replication stream's
// figures: the single stream from the primary (narrows) to the replica's
// host (the agent), what held it as the stream verdicts read it, and the
// N-stream run in the same direction as the link. Nil without a single
// stream that carried anything.
func ReplicaStreamOf(s *result.Stream, source string) *result.ReplicaStream {
	if s == nil {
		return nil
	}
	var one *result.StreamRun
	for i := range s.Runs {
		r := &s.Runs[i]
		if r.Phase != result.PhaseSingle || r.Throughput <= 0 {
			continue
		}
		if one == nil || r.Direction == "forward" && one.Direction != "forward" {
			one = r
		}
	}
	if one == nil {
		return nil
	}
	rs := &result.ReplicaStream{Capacity: one.Throughput / 8, LimitedBy: read(*one, s, nil, nil).cause, SameHost: s.SameHost, Source: source}
	if t := one.TCP; t != nil {
		rs.RTT, rs.MinRTT, rs.PeerWindow, rs.MSS = t.RTT, t.MinRTT, t.SndWndBytes, t.MSSBytes
		rs.Retransmits, rs.RetransRatio = t.Retransmits, t.RetransRatio
	}
	for _, r := range s.Runs {
		if r.Phase == result.PhaseParallel && r.Direction == one.Direction && r.Throughput > 0 && r.Stopped == "" {
			rs.Link, rs.LinkStreams = r.Throughput/8, r.Streams
		}
	}
	if b := s.Buffers; b != nil {
		if one.Direction == "forward" {
			rs.ReceiverRmemMax, rs.SenderWmemMax, rs.ReceiverOS, rs.SenderOS = b.AgentRmemMax, b.ClientWmemMax, b.AgentOS, b.ClientOS
			rs.ReceiverRmemLow, rs.SenderWmemLow = b.AgentRmemLow, b.ClientWmemLow
		} else {
			rs.ReceiverRmemMax, rs.SenderWmemMax, rs.ReceiverOS, rs.SenderOS = b.ClientRmemMax, b.AgentWmemMax, b.ClientOS, b.AgentOS
			rs.ReceiverRmemLow, rs.SenderWmemLow = b.ClientRmemLow, b.AgentWmemLow
		}
	}
	return rs
}

// InferLimit names what held a stream given by hand (--assume) without
// saying: its window when rate × RTT reaches FullWindow of it, loss past
// LossBound, the link when N streams carried little more; else unknown.
func InferLimit(s result.ReplicaStream) string {
	rtt := s.RTT
	if rtt <= 0 {
		rtt = s.MinRTT
	}
	switch {
	case s.PeerWindow > 0 && rtt > 0 && s.Capacity*rtt.D().Seconds() >= FullWindow*float64(s.PeerWindow):
		return result.LimitWindow
	case s.RetransRatio >= LossBound:
		return result.LimitLoss
	case s.Link > 0 && s.Link < Headroom*s.Capacity:
		return result.LimitLink
	}
	return result.LimitUnknown
}
