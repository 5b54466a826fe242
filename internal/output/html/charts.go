package html

import (
	"fmt"
	"html/template"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// Chart ids are the section's id and the chart's class, e.g.
// "s2-chart-throughput": unique in a doctor's page, and found by class.
const (
	ChartThroughput  = "chart-throughput"
	ChartRTT         = "chart-rtt"
	ChartDisk        = "chart-disk-latency"
	ChartReplQueue   = "chart-repl-queue"
	ChartCommit      = "chart-commit-latency"
	ChartReplicaLog  = "chart-replica-log"
	BackupTableClass = "backup-table"
)

// charts draws what a run's records hold.
// facts are the host's where narrows ran (the doctor's, for a step).
func charts(id string, rep *result.Report, ivs []result.Interval, facts, agentFacts *result.Facts) []template.HTML {
	var out []template.HTML
	switch p := rep.Part().(type) {
	case *result.Stream:
		out = append(out, throughputChart(id, rep, ivs, facts, agentFacts))
	case *result.RR:
		out = append(out, logDotPlot(id+"-"+ChartRTT, ChartRTT, "Round-trip time distribution (log scale)",
			append([]distRow{latencyRow("whole run", p.Latency)}, intervalRTTRows(ivs, "rr")...)))
	case *result.DBPing:
		out = append(out, logDotPlot(id+"-"+ChartRTT, ChartRTT, "Query round-trip distribution (log scale)",
			append([]distRow{latencyRow(p.Config.Query, p.Latency)}, intervalRTTRows(ivs, result.ProbeDBPing)...)))
	case *result.Disk:
		if len(p.Patterns) == 0 {
			break
		}
		var rows []distRow
		for _, pat := range p.Patterns {
			rows = append(rows, latenciesRow(pat.Profile+": "+pat.Name, pat.Latencies))
			if pat.FlushLatency != nil {
				rows = append(rows, latenciesRow("  its fdatasync", *pat.FlushLatency))
			}
		}
		out = append(out, logDotPlot(id+"-"+ChartDisk, ChartDisk, "I/O latency percentiles per pattern (log scale)", rows))
	case *result.Commit:
		rows := []distRow{latenciesRow("commit (client)", p.Latency)}
		if p.AgentWrite != nil {
			rows = append(rows, latenciesRow("agent write", *p.AgentWrite))
		}
		if p.AgentFlush != nil {
			rows = append(rows, latenciesRow("agent flush", *p.AgentFlush))
		}
		out = append(out, logDotPlot(id+"-"+ChartCommit, ChartCommit, "Commit latency and the agent's part (log scale)", rows))
	case *result.Repl:
		if c, ok := replQueueChart(id, ivs); ok {
			out = append(out, c)
		}
	case *result.ReplicaPlan:
		out = append(out, replicaLogChart(id, p))
	case *result.Fleet:
		out = append(out, fleetCharts(id, p)...) // fleet.go
	}
	// The other kinds draw no chart: their figures are the summary's.
	return out
}

func latencyRow(label string, l result.Latency) distRow {
	return latenciesRow(label, result.Latencies(l))
}

func latenciesRow(label string, l result.Latencies) distRow {
	return distRow{label: label, marks: []mark{{"min", l.Min.D()}, {"p50", l.P50.D()}, {"p90", l.P90.D()},
		{"p99", l.P99.D()}, {"p99.9", l.P999.D()}, {"max", l.Max.D()}}}
}

// intervalRTTRows are the first intervals' distributions, under the
// run's: how steady the path was.
func intervalRTTRows(ivs []result.Interval, probe string) []distRow {
	var rows []distRow
	for _, iv := range ivs {
		if iv.Probe != probe || iv.RTT == nil {
			continue
		}
		if len(rows) == 10 {
			break
		}
		rows = append(rows, latencyRow(fmt.Sprintf("%s–%s s", trimSeconds(iv.Start.D().Seconds()), trimSeconds(iv.End.D().Seconds())), *iv.RTT))
	}
	return rows
}

// throughputChart: the receiver's throughput in each interval, a line per
// phase and direction, against the link's rate when the NIC tells it. A
// try's runs (up to eight of each kind, in turn) draw their first run of
// each kind: the runs as is between them are the single stream again.
func throughputChart(id string, rep *result.Report, ivs []result.Interval, facts, agentFacts *result.Facts) template.HTML {
	var ss []series
	here, there := words.Ends(rep.Target, facts, agentFacts)
	index := map[string]int{}
	drawn := map[string]bool{} // a phase whose first run is drawn
	for _, iv := range ivs {
		if iv.Probe != "stream" || iv.Phase == result.PhaseAsIs {
			continue
		}
		key := iv.Phase + " " + iv.Direction
		i, ok := index[key]
		if ok && (drawn[key] || iv.Start.D().Seconds() < ss[i].pts[len(ss[i].pts)-1].x) {
			drawn[key] = true // a second run of it began
			continue
		}
		if !ok {
			name := "1 stream"
			switch iv.Phase {
			case result.PhaseParallel:
				name = fmt.Sprintf("%d streams", iv.Streams)
			case result.PhaseSteered:
				name = "1 stream steered"
			case result.PhaseOffloads:
				name = "1 stream, offloads on"
			}
			name += " " + words.Way(iv.Direction, here, there)
			i = len(ss)
			index[key] = i
			ss = append(ss, series{name: name})
		}
		// A rate over the interval: a step from its start to its end.
		ss[i].pts = append(ss[i].pts, point{iv.Start.D().Seconds(), iv.Throughput}, point{iv.End.D().Seconds(), iv.Throughput})
	}
	var refs []hline
	for _, r := range rep.Stream.Runs {
		if r.WireThroughput > 0 && len(ss) == 0 {
			ss = append(ss, series{name: "run mean", pts: []point{{0, r.Throughput}, {r.Duration.D().Seconds(), r.Throughput}}})
		}
	}
	title := "Throughput per interval"
	// The interface's speed is what its driver says, not the path's rate
	// (a TUN device says 10 Gbit/s on a 300 Mbit/s line): it is drawn,
	// and named for what it is, only when the readings come near it; far
	// above them it would only flatten them.
	if link, name := linkRate(facts); link > 0 && !rep.Stream.SameHost && peakOf(ss) >= link/nearNominal {
		refs = append(refs, hline{link, "nominal speed of " + name + " " + metric.FormatBitRate(link)})
		title += ", with the interface's nominal speed"
	}
	if rep.Stream.SameHost {
		refs = append(refs, hline{0, "same host: no link crossed"})
	}
	return lineChart(id+"-"+ChartThroughput, ChartThroughput, title, ss, refs, bitRateTick)
}

// nearNominal: readings within this factor of an interface's nominal speed
// are drawn against it.
const nearNominal = 4

func peakOf(ss []series) float64 {
	var p float64
	for _, s := range ss {
		for _, pt := range s.pts {
			p = max(p, pt.y)
		}
	}
	return p
}

// linkRate is the fastest NIC's speed the facts name, in bits per second.
func linkRate(f *result.Facts) (float64, string) {
	if f == nil {
		return 0, ""
	}
	var best int64
	var name string
	for _, n := range f.Interfaces {
		if n.SpeedMbps > best {
			best, name = n.SpeedMbps, n.Name
		}
	}
	return float64(best) * 1e6, name
}

var stageOrder = []string{"unsent", "unwritten", "unflushed", "unreplayed"}

// replQueueChart: the bytes waiting at each stage of each replica, poll
// by poll.
func replQueueChart(id string, ivs []result.Interval) (template.HTML, bool) {
	var ss []series
	index := map[string]int{}
	var t0 time.Time
	for _, iv := range ivs {
		if iv.Repl == nil || iv.Repl.Gap != nil {
			continue
		}
		x := iv.End.D().Seconds()
		if x == 0 && !iv.Repl.At.IsZero() {
			if t0.IsZero() {
				t0 = iv.Repl.At
			}
			x = iv.Repl.At.Sub(t0).Seconds()
		}
		for _, rs := range iv.Repl.Replicas {
			who := rs.Name
			if rs.Database != "" {
				who += "/" + rs.Database
			}
			for si, v := range []*int64{rs.Unsent, rs.Unwritten, rs.Unflushed, rs.Unreplayed} {
				if v == nil {
					continue
				}
				key := who + " " + stageOrder[si]
				i, ok := index[key]
				if !ok {
					i = len(ss)
					index[key] = i
					ss = append(ss, series{name: key})
				}
				ss[i].pts = append(ss[i].pts, point{x, float64(*v)})
			}
		}
	}
	if len(ss) == 0 {
		return "", false
	}
	return lineChart(id+"-"+ChartReplQueue, ChartReplQueue, "Replication queue per stage over time", ss, nil, byteTick), true
}

// replicaLogChart: the log generated in each interval of the watch, per
// database, against what one stream carries.
func replicaLogChart(id string, rp *result.ReplicaPlan) template.HTML {
	var ss []series
	for _, l := range rp.Log {
		name := l.Database
		if name == "" {
			name = "log"
		}
		step := l.Interval.D().Seconds()
		if step <= 0 {
			step = 1
		}
		s := series{name: name + " generated"}
		for i, v := range l.Samples {
			s.pts = append(s.pts, point{float64(i+1) * step, v})
		}
		if len(s.pts) == 0 {
			s.pts = []point{{0, l.Mean}, {1, l.Mean}}
		}
		ss = append(ss, s)
	}
	refs := []hline{{rp.Stream.Capacity, "one stream carries " + metric.FormatByteRate(rp.Stream.Capacity)}}
	return lineChart(id+"-"+ChartReplicaLog, ChartReplicaLog, "Log generated per interval against one stream's capacity", ss, refs, byteRateTick)
}
