package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
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

// replColumns are the engine's names for the generic stage columns.
var replColumns = map[string][6]string{
	"postgres":  {"unsent", "unflushed", "unreplayed", "send", "replay", "replay lag"},
	"mysql":     {"unfetched", "-", "unapplied", "fetch", "apply", "behind src"},
	"sqlserver": {"send queue", "-", "redo queue", "send", "redo", "sec. lag"},
}

const replRow = "%-9s %-16s %-9s %11s %10s %10s %10s %11s %11s %10s %7s  %s\n"

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
			_, err = fmt.Fprintf(t.w, "%-14s %10s %9s %9s %9s %9s %9s\n", "interval", "queries/s", "p50", "p90", "p99", "p99.9", "max")
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
			_, err = fmt.Fprintf(t.w, "%-14s %14s %12s %10s %9s %11s %11s\n", "interval", "log rate", "log", "rows", "commits", "commit p50", "commit p99")
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
		cols := replColumns[p.Engine]
		if t.header != "db repl "+p.Engine {
			t.header = "db repl " + p.Engine
			_, err = fmt.Fprintf(t.w, replRow, "time", "replica", "state", "generation", cols[0], cols[1], cols[2], cols[3]+"/s", cols[4]+"/s", cols[5], "reply", "verdict")
		}
		if len(p.Replicas) == 0 {
			_, err = fmt.Fprintf(t.w, replRow, at(iv), "(none)", "-", rateOf(p.GenerationRate), "-", "-", "-", "-", "-", "-", "-", "no replica connected")
		}
		for _, r := range p.Replicas {
			gen := p.GenerationRate
			if r.Generation != nil {
				gen = r.Generation
			}
			var mid, lag, reply string
			switch p.Engine {
			case "postgres":
				var unfl *int64
				if r.Unwritten != nil && r.Unflushed != nil {
					v := *r.Unwritten + *r.Unflushed
					unfl = &v
				}
				mid, lag, reply = bytesOf(unfl), secsOf(r.ReplayLag), secsOf(r.LastReply)
				if r.SilentFor != nil {
					reply = secsOf(r.SilentFor)
				}
			case "mysql":
				mid, lag = "-", "-"
				if r.SecondsBehind != nil {
					lag = fmt.Sprintf("%.0f s", r.SecondsBehind.D().Seconds())
				}
				if r.SecondsBehindNull {
					lag = "NULL"
				}
				reply = "-"
				if r.IOThread != "" {
					reply = shortThread(r.IOThread) + "/" + shortThread(r.SQLThread)
				}
			default:
				mid, lag, reply = "-", secsOf(r.SecondaryLag), "-"
			}
			verdict := r.Verdict
			if r.Gap != nil {
				verdict += " [replica connection lost: " + r.Gap.Reason + "]"
			}
			_, err = fmt.Fprintf(t.w, replRow, at(iv), clip(replicaName(r), 16), r.State, rateOf(gen), bytesOf(r.Unsent), mid, bytesOf(r.Unreplayed),
				rateOf(r.SendRate), rateOf(r.ReplayRate), lag, reply, verdict)
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

func shortThread(s string) string {
	switch s {
	case "Yes":
		return "io"
	case "No":
		return "NO"
	case "Connecting":
		return "conn"
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

// dbSummary writes the summary of a db command.
func dbSummary(b *strings.Builder, r *result.Report) {
	if p := r.DBPing; p != nil {
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
	if rp := r.Repl; rp != nil {
		fmt.Fprintf(b, "polls        %s every %s over %s; each poll: %d queries on the primary, 1 on each replica named\n", metric.FormatCount(rp.Polls), dur(rp.Config.Interval), dur(rp.Duration), rp.QueriesPerPoll)
		if l := rp.Last; l != nil {
			for _, st := range l.Replicas {
				rpo := "-"
				if st.RPOBytes != nil {
					rpo = metric.FormatBytes(*st.RPOBytes)
					if st.RPOSeconds != nil {
						rpo += " = " + zdur(*st.RPOSeconds) + " of log"
					}
				}
				catch := "never at current rates"
				if st.CatchUp != nil {
					catch = zdur(*st.CatchUp)
				}
				if st.State == result.ReplicaSilent {
					catch = "unknown"
				}
				fmt.Fprintf(b, "replica      %s: %s; RPO %s; catch-up %s", replicaName(st), st.Verdict, rpo, catch)
				if st.RedoTime != nil && *st.RedoTime > 0 {
					fmt.Fprintf(b, "; redo %s", dur(*st.RedoTime))
				}
				if st.SyncState != "" {
					fmt.Fprintf(b, "; %s", st.SyncState)
				}
				b.WriteString("\n")
			}
		}
		gapLines(b, rp.Gaps, rp.Stopped)
	}
	if l := r.DBLoad; l != nil {
		// The log and its rate in one unit (decimal, as --rate and db repl
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
				fmt.Fprintf(b, "%-12s %s, %s rows, payload %s", fmt.Sprintf("session %d", s.Session), metric.Plural(s.Commits, "commit"),
					metric.FormatCount(s.Rows), metric.FormatByteRate(s.PayloadRate))
				if c := s.CommitLatency; c != nil {
					fmt.Fprintf(b, "; commit p50 %s, p99 %s", dur(c.P50), dur(c.P99))
				}
				b.WriteString("\n")
			}
		}
		gapLines(b, l.Gaps, l.Stopped)
	}
}

// gapLines ends a db summary: its gaps, and why it stopped early if it did.
func gapLines(b *strings.Builder, gaps []result.Gap, stopped string) {
	for _, g := range gaps {
		end := "still open"
		if g.End != nil {
			end = fmt.Sprintf("to %.1f s", g.End.D().Seconds())
		}
		fmt.Fprintf(b, "gap          %s lost from %.1f s %s (%d retries): %s\n", g.Of, g.Start.D().Seconds(), end, g.Retries, g.Reason)
	}
	if stopped != "" {
		fmt.Fprintf(b, "stopped      %s\n", stopped)
	}
}
