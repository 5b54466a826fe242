package table

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

func bytesOf(p *int64) string {
	if p == nil {
		return "-"
	}
	return metric.FormatBytes(*p)
}

func rateOf(p *float64) string {
	if p == nil {
		return "-"
	}
	return metric.FormatByteRate(*p)
}

func secsOf(p *result.Seconds) string {
	if p == nil {
		return "-"
	}
	return dur(*p)
}

// zdur is dur with "0 s" for nothing at all.
func zdur(s result.Seconds) string {
	if s == 0 {
		return "0 s"
	}
	return dur(s)
}

func at(iv result.Interval) string { return fmt.Sprintf("%.1f s", iv.End.D().Seconds()) }

// replCell is one column of the db repl rows.
type replCell struct {
	head string
	w    int
	left bool
}

// replLayout is the columns of an engine's rows: the stages it has, in its
// own words, and the column that says whether the replica reports.
func replLayout(engine string, nameW int) []replCell {
	w := words.ReplOf(engine)
	cells := []replCell{{"time", 9, true}, {"replica", nameW, true}, {"state", 9, true}, {"generation", 11, false}, {w.Unsent, 10, false}}
	if w.Unflushed != "" {
		cells = append(cells, replCell{w.Unflushed, 10, false})
	}
	cells = append(cells, replCell{w.Unreplayed, 10, false}, replCell{w.Send + "/s", 11, false}, replCell{w.Replay + "/s", 11, false}, replCell{w.Lag, 10, false})
	switch engine {
	case "postgres":
		cells = append(cells, replCell{"reply", 8, false})
	case "mysql":
		cells = append(cells, replCell{"io/sql", 8, false})
	}
	return append(cells, replCell{"verdict", 0, true})
}

func replLine(cells []replCell, vals []string) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case c.w == 0:
			b.WriteString(vals[i])
		case c.left:
			fmt.Fprintf(&b, "%-*s", c.w, vals[i])
		default:
			fmt.Fprintf(&b, "%*s", c.w, vals[i])
		}
	}
	return strings.TrimRight(b.String(), " ") + "\n"
}

// dbInterval writes a db ping, db repl or db load row.
func (t *Writer) dbInterval(iv result.Interval) error {
	var err error
	switch iv.Probe {
	case result.ProbeDBPing:
		if iv.Gap != nil {
			if iv.Gap.End == nil {
				_, err = fmt.Fprintf(t.w, "%-14s -- connection lost: %s; reconnecting (no figures until then) --\n", span(iv), iv.Gap.Reason)
			} else {
				_, err = fmt.Fprintf(t.w, "%-14s -- reconnected after %s (%d failed attempts) --\n", span(iv), dur(*iv.Gap.End-iv.Gap.Start), iv.Gap.Retries)
			}
			return err
		}
		if t.header != "db ping" {
			t.header = "db ping"
			if _, err := fmt.Fprintf(t.w, "%-14s %10s %9s %9s %9s %9s %9s\n", "interval", "queries/s", "p50", "p90", "p99", "p99.9", "max"); err != nil {
				return err
			}
		}
		l := iv.RTT
		if l == nil {
			l = &result.Latency{}
		}
		_, err = fmt.Fprintf(t.w, "%-14s %10s %9s %9s %9s %9s %9s\n", span(iv), metric.FormatCount(int64(iv.QueryRate+0.5)),
			dur(l.P50), dur(l.P90), dur(l.P99), dur(l.P999), dur(l.Max))
	case result.ProbeDBLoad:
		l := iv.Load
		if l == nil {
			return nil
		}
		if l.Gap != nil {
			if l.Gap.End == nil {
				_, err = fmt.Fprintf(t.w, "%-14s -- connection lost: %s; reconnecting --\n", span(iv), l.Gap.Reason)
			} else {
				_, err = fmt.Fprintf(t.w, "%-14s -- reconnected after %s --\n", span(iv), dur(*l.Gap.End-l.Gap.Start))
			}
			return err
		}
		if t.header != "db load" {
			t.header = "db load"
			if _, err := fmt.Fprintf(t.w, "%-14s %14s %12s %10s %9s %11s %11s\n", "interval", "log rate", "log", "rows", "commits", "commit p50", "commit p99"); err != nil {
				return err
			}
		}
		p50, p99 := "-", "-"
		if l.CommitP50 != nil && l.CommitP99 != nil {
			p50, p99 = dur(*l.CommitP50), dur(*l.CommitP99)
		}
		_, err = fmt.Fprintf(t.w, "%-14s %14s %12s %10s %9s %11s %11s\n", span(iv), metric.FormatByteRate(l.Rate), metric.FormatDecimalBytes(l.LogBytes),
			metric.FormatCount(l.Rows), metric.FormatCount(l.Commits), p50, p99)
	case result.ProbeRepl:
		p := iv.Repl
		if p == nil {
			return nil
		}
		if p.Gap != nil {
			_, err = fmt.Fprintf(t.w, "%-9s -- primary unreachable: %s; retrying with backoff (no figures, none carried over) --\n", at(iv), p.Gap.Reason)
			return err
		}
		if t.header != "db repl "+p.Engine {
			t.header = "db repl " + p.Engine
			// As wide as the first poll's names need, within reason.
			t.nameW = 16
			for _, r := range p.Replicas {
				t.nameW = min(max(t.nameW, len([]rune(replicaName(r)))), 32)
			}
			cells := replLayout(p.Engine, t.nameW)
			heads := make([]string, len(cells))
			for i, c := range cells {
				heads[i] = c.head
			}
			if _, err := io.WriteString(t.w, replLine(cells, heads)); err != nil {
				return err
			}
		}
		cells := replLayout(p.Engine, t.nameW)
		if len(p.Replicas) == 0 {
			vals := make([]string, len(cells))
			for i := range vals {
				vals[i] = "-"
			}
			vals[0], vals[1], vals[3], vals[len(vals)-1] = at(iv), "(none)", rateOf(p.GenerationRate), "no replica connected"
			_, err = io.WriteString(t.w, replLine(cells, vals))
		}
		for _, r := range p.Replicas {
			gen := p.GenerationRate
			if r.Generation != nil {
				gen = r.Generation
			}
			vals := []string{at(iv), clip(replicaName(r), t.nameW), r.State, rateOf(gen), bytesOf(r.Unsent)}
			switch p.Engine {
			case "postgres":
				var unfl *int64
				if r.Unwritten != nil && r.Unflushed != nil {
					v := *r.Unwritten + *r.Unflushed
					unfl = &v
				}
				reply := "-"
				switch {
				case r.SilentFor != nil:
					reply = zdur(*r.SilentFor)
				case r.LastReply != nil:
					reply = zdur(*r.LastReply)
				}
				vals = append(vals, bytesOf(unfl), bytesOf(r.Unreplayed), rateOf(r.SendRate), rateOf(r.ReplayRate), secsOf(r.ReplayLag), reply)
			case "mysql":
				lag := "-"
				if r.SecondsBehind != nil {
					lag = fmt.Sprintf("%.0f s", r.SecondsBehind.D().Seconds())
				}
				if r.SecondsBehindNull {
					lag = "NULL"
				}
				threads := "-"
				if r.IOThread != "" || r.SQLThread != "" {
					threads = shortThread(r.IOThread) + "/" + shortThread(r.SQLThread)
				}
				vals = append(vals, bytesOf(r.Unreplayed), rateOf(r.SendRate), rateOf(r.ReplayRate), lag, threads)
			default:
				vals = append(vals, bytesOf(r.Unreplayed), rateOf(r.SendRate), rateOf(r.ReplayRate), secsOf(r.SecondaryLag))
			}
			vals = append(vals, r.Verdict)
			if _, err := io.WriteString(t.w, replLine(cells, vals)); err != nil {
				return err
			}
		}
	}
	return err
}

// replicaName is the replica, with the database for SQL Server.
func replicaName(r result.ReplicaState) string {
	if r.Database != "" {
		return r.Name + "/" + r.Database
	}
	return r.Name
}

// shortThread is a replication thread's Slave_IO_Running /
// Slave_SQL_Running word, short enough for its column.
func shortThread(s string) string {
	switch s {
	case "Connecting":
		return "Conn"
	case "":
		return "-"
	}
	return s
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// pingSummary writes the summary of db ping.
func pingSummary(b *strings.Builder, p *result.DBPing) {
	c := p.Config
	what := metric.FormatDuration(c.Duration.D())
	if c.Count > 0 {
		what = metric.FormatCount(c.Count) + " queries"
	}
	fmt.Fprintf(b, "queries      %s in %s = %s/s, one session, one query outstanding (%s, %s)\n", metric.FormatCount(p.Queries), dur(p.Duration),
		metric.FormatCount(int64(p.Rate+0.5)), c.Query, what)
	fmt.Fprintf(b, "full rtt     min %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s\n",
		dur(p.Min), dur(p.P50), dur(p.P90), dur(p.P99), dur(p.P999), dur(p.Max), dur(p.Mean))
	fmt.Fprintf(b, "connect      %s: %s\n", dur(p.Connect.Total), p.Connect.Parts())
	if n := p.Network; n != nil {
		if n.NetworkP50 != nil {
			fmt.Fprintf(b, "split        network %s (%.0f%%, net rr via agent %s) + server and driver %s (%.0f%%) = query p50 %s\n",
				dur(*n.NetworkP50), 100**n.NetworkShare, n.Agent, dur(*n.ServerP50), 100**n.ServerShare, dur(n.QueryRTTP50))
		} else {
			fmt.Fprintf(b, "split        network %s + server and driver %s–%s = query p50 %s\n", n.Range(),
				dur(n.QueryRTTP50-n.NetworkHigh), dur(n.QueryRTTP50-n.NetworkLow), dur(n.QueryRTTP50))
		}
		fmt.Fprintf(b, "bounds       network at least: %s; at most: %s\n", n.LowFromText(), n.HighFromText())
		if n.AgentError != "" {
			fmt.Fprintf(b, "agent        (could not measure: %s)\n", n.AgentError)
		}
	}
	if p.TCPUnavailable == "" && p.KernelRTT > 0 {
		fmt.Fprintf(b, "kernel rtt   %s smoothed, %s min (TCP's view of the session; includes the server's time, since ACKs ride on answers)\n", dur(p.KernelRTT), dur(p.KernelMinRTT))
	}
	if p.ServerVersion != "" {
		fmt.Fprintf(b, "server       %s %s\n", p.Engine, p.ServerVersion)
	}
	gapLines(b, p.Gaps, p.Stopped)
}

// loadSummary writes the summary of db load.
func loadSummary(b *strings.Builder, l *result.DBLoad) {
	// The log and its rate in one unit (decimal, as --log-rate and db repl
	// give rates): "25.0 MB in 5.00 s = 5.00 MB/s".
	fmt.Fprintf(b, "log          %s in %s = %s (asked %s), measured by %s\n", metric.FormatDecimalBytes(l.LogBytes), dur(l.Duration),
		metric.FormatByteRate(l.Rate), metric.FormatByteRate(l.Config.Rate), l.Measure)
	dropped := "dropped"
	if !l.Dropped {
		dropped = "NOT dropped"
	}
	fmt.Fprintf(b, "table        %s: %s rows of %s, %s\n", l.Table, metric.FormatCount(l.Rows), metric.FormatBytes(l.Config.RowBytes), dropped)
	fmt.Fprintf(b, "commits      %s in %s, each one INSERT of %s", metric.FormatCount(l.Commits), metric.Plural(int64(len(l.Sessions)), "session"),
		result.CommitRows(l.RowsPerCommit, l.Config.RowBytes))
	if c := l.CommitLatency; c != nil {
		fmt.Fprintf(b, ": latency p50 %s, p90 %s, p99 %s, max %s", dur(c.P50), dur(c.P90), dur(c.P99), dur(c.Max))
	}
	b.WriteString("\n")
	if len(l.Sessions) > 1 {
		for _, s := range l.Sessions {
			fmt.Fprintf(b, "%-12s %s, %s rows, payload %s", fmt.Sprintf("session %d", s.Session), metric.Plural(int64(s.Commits), "commit"),
				metric.FormatCount(s.Rows), metric.FormatByteRate(s.PayloadRate))
			if c := s.CommitLatency; c != nil {
				fmt.Fprintf(b, "; commit p50 %s, p99 %s", dur(c.P50), dur(c.P99))
			}
			b.WriteString("\n")
		}
	}
	gapLines(b, l.Gaps, l.Stopped)
}

// replSummary is the db repl summary: every replica as the run ended, then
// what the run held: the time in each verdict, the worst queues, the
// longest silence, the worst RPO.
func replSummary(b *strings.Builder, rp *result.Repl) {
	w := words.ReplOf(rp.Engine)
	fmt.Fprintf(b, "polls        %s every %s over %s; each poll: %d queries on the primary, 1 on each replica named\n", metric.FormatCount(rp.Polls), dur(rp.Config.Interval), dur(rp.Duration), rp.QueriesPerPoll)
	run := rp.Run
	if run != nil && run.PeakGeneration != nil && run.MeanGeneration != nil {
		fmt.Fprintf(b, "generation   peak %s, mean %s over the polls\n", metric.FormatByteRate(*run.PeakGeneration), metric.FormatByteRate(*run.MeanGeneration))
	}
	if run != nil && run.PrimaryUnreachable > 0 {
		fmt.Fprintf(b, "primary      unreachable for %s in all\n", zdur(run.PrimaryUnreachable))
	}
	var last []result.ReplicaState
	if rp.Last != nil {
		last = rp.Last.Replicas
	}
	var runs []result.ReplicaRun
	if run != nil {
		runs = run.Replicas
	}
	// Every replica the run saw, in the order it first appeared.
	names := []string{}
	for _, rr := range runs {
		names = append(names, rr.Name+"\x00"+rr.Database)
	}
	for _, st := range last {
		if k := st.Name + "\x00" + st.Database; !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	for _, k := range names {
		name, db, _ := strings.Cut(k, "\x00")
		fmt.Fprintf(b, "replica      %s", replicaName(result.ReplicaState{Name: name, Database: db}))
		i := slices.IndexFunc(last, func(st result.ReplicaState) bool { return st.Name == name && st.Database == db })
		if i >= 0 {
			st := last[i]
			var about []string
			if st.ClientAddr != "" {
				about = append(about, "from "+st.ClientAddr)
			}
			if st.Slot != "" {
				about = append(about, "slot "+st.Slot)
			}
			if st.SyncState != "" {
				about = append(about, st.SyncState)
			}
			if len(about) > 0 {
				fmt.Fprintf(b, " (%s)", strings.Join(about, ", "))
			}
			b.WriteString("\n")
			fmt.Fprintf(b, "  at the end %s\n", st.Verdict)
			fmt.Fprintf(b, "             RPO %s; catch-up %s", rpoText(st), catchText(st))
			if st.RedoTime != nil && *st.RedoTime > 0 {
				fmt.Fprintf(b, "; redo %s", dur(*st.RedoTime))
			}
			if st.SlotRetained != nil && *st.SlotRetained >= 1<<20 {
				fmt.Fprintf(b, "; its slot keeps %s of WAL", metric.FormatBytes(*st.SlotRetained))
			}
			if st.ClockOffset != nil {
				fmt.Fprintf(b, "; its clock is %s the primary's", clockText(*st.ClockOffset))
			}
			b.WriteString("\n")
		} else {
			b.WriteString(" (not in the last poll)\n")
		}
		j := slices.IndexFunc(runs, func(rr result.ReplicaRun) bool { return rr.Name == name && rr.Database == db })
		if j < 0 {
			continue
		}
		rr := runs[j]
		var vs []string
		for _, v := range rr.Verdicts {
			x := fmt.Sprintf("%s %s", w.Verdict(v.Verdict), zdur(v.Seconds))
			if v.Verdict != result.VerdictKeepingUp {
				x += fmt.Sprintf(" from %.1f s", v.First.D().Seconds())
			}
			vs = append(vs, x)
		}
		fmt.Fprintf(b, "  verdicts   %s (%s)\n", strings.Join(vs, ", "), metric.Plural(int64(rr.Polls), "poll"))
		var qs []string
		for _, q := range rr.Stages {
			if q.Worst > 0 {
				qs = append(qs, fmt.Sprintf("%s worst %s at %.1f s, mean %s", w.Stage(q.Stage), metric.FormatBytes(q.Worst), q.WorstAt.D().Seconds(), metric.FormatBytes(int64(q.Mean+0.5))))
			}
		}
		switch {
		case len(qs) > 0:
			fmt.Fprintf(b, "  queues     %s\n", strings.Join(qs, "; "))
		case len(rr.Stages) > 0:
			b.WriteString("  queues     empty at every poll\n")
		}
		if l := rr.LongestSilence; l != nil {
			from := fmt.Sprintf("from %.1f s", rr.LongestSilenceStart.D().Seconds())
			if *rr.LongestSilenceStart < 0 {
				from = fmt.Sprintf("from %s before narrows started", zdur(-*rr.LongestSilenceStart))
			}
			fmt.Fprintf(b, "  silence    longest %s, %s\n", zdur(*l), from)
		}
		if rr.WorstRPO != nil && *rr.WorstRPO > 0 {
			x := metric.FormatBytes(*rr.WorstRPO)
			if rr.WorstRPOSeconds != nil {
				x += " = " + zdur(*rr.WorstRPOSeconds) + " of log"
			}
			fmt.Fprintf(b, "  worst RPO  %s, at %.1f s\n", x, rr.WorstRPOAt.D().Seconds())
		}
	}
	var primary []result.Gap
	for _, g := range rp.Gaps {
		if g.Of == "primary" {
			primary = append(primary, g)
			continue
		}
		// A replica's own session: the primary's figures of it go on.
		end := "to the end"
		if g.End != nil {
			end = fmt.Sprintf("to %.1f s", g.End.D().Seconds())
		}
		fmt.Fprintf(b, "gap          %s's own session (--replica-dsn) lost from %.1f s %s (%d reconnects failed): %s; the rows keep what the primary tells of it\n",
			g.Of, g.Start.D().Seconds(), end, g.Retries, g.Reason)
	}
	gapLines(b, primary, rp.Stopped)
}

func rpoText(st result.ReplicaState) string {
	if st.RPOBytes == nil {
		if st.State == result.ReplicaSilent && st.Unconfirmed != nil {
			return "unknown (at most the " + metric.FormatBytes(*st.Unconfirmed) + " of log it has not confirmed)"
		}
		return "unknown"
	}
	rpo := metric.FormatBytes(*st.RPOBytes)
	if st.RPOSeconds != nil {
		rpo += " = " + zdur(*st.RPOSeconds) + " of log"
	}
	return rpo
}

func catchText(st result.ReplicaState) string {
	switch {
	case st.State == result.ReplicaSilent:
		return "unknown"
	case st.CatchUp != nil:
		return zdur(*st.CatchUp)
	case st.VerdictCode == result.VerdictUnknown:
		return "unknown"
	}
	return "never at current rates"
}

// clockText says how a standby's clock stands to the primary's; under
// 100 ms is within what two queries' round trips can tell.
func clockText(s result.Seconds) string {
	switch {
	case s.D().Abs() < 100*time.Millisecond:
		return "within 100 ms of"
	case s < 0:
		return dur(-s) + " behind"
	}
	return dur(s) + " ahead of"
}

// gapLines ends a db summary: its gaps, and why it stopped early if it did.
func gapLines(b *strings.Builder, gaps []result.Gap, stopped string) {
	for _, g := range gaps {
		end := "to the end"
		if g.End != nil {
			end = fmt.Sprintf("to %.1f s", g.End.D().Seconds())
		}
		fmt.Fprintf(b, "gap          %s lost from %.1f s %s (%d reconnects failed): %s\n", g.Of, g.Start.D().Seconds(), end, g.Retries, g.Reason)
	}
	if stopped != "" {
		fmt.Fprintf(b, "stopped      %s\n", stopped)
	}
}
