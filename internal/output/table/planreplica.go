package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// replicaSummary writes a replica plan: the log and the stream it was
// composed from, one row per stream (and the link), the window the peak
// needs with its settings, and the what-ifs with their formulas.
func replicaSummary(b *strings.Builder, p *result.ReplicaPlan) {
	engine := p.Engine
	if engine == "" {
		engine = "given"
	}
	b.WriteString("Log generation (" + engine + "):\n")
	fmt.Fprintf(b, "  %-16s %12s %12s %13s  %s\n", "database", "mean", "peak (1 s)", "peak (10 s)", "source")
	for _, l := range p.Log {
		sustained := "-"
		if l.PeakSustained > 0 {
			sustained = metric.FormatByteRate(l.PeakSustained)
		}
		fmt.Fprintf(b, "  %-16s %12s %12s %13s  %s\n", dbLabel(l.Database), metric.FormatByteRate(l.Mean), metric.FormatByteRate(l.Peak), sustained, provenance(l.Source, l.What))
	}
	s := p.Stream
	fmt.Fprintf(b, "\nOne stream to the replica's host: %s, limited by %s; %s\n", metric.FormatByteRate(s.Capacity), words.Limit(s.LimitedBy), s.Source)
	var tcp []string
	if s.RTT > 0 || s.MinRTT > 0 {
		tcp = append(tcp, fmt.Sprintf("RTT %s (min %s)", dur(s.RTT), dur(s.MinRTT)))
	}
	if s.PeerWindow > 0 {
		tcp = append(tcp, "peer window "+metric.FormatCount(s.PeerWindow)+" B")
	}
	if s.MSS > 0 {
		tcp = append(tcp, fmt.Sprintf("MSS %d B", s.MSS))
	}
	switch {
	case strings.HasPrefix(s.Source, "measured"):
		tcp = append(tcp, fmt.Sprintf("%s retransmits (%.2f%% of bytes sent again)", metric.FormatCount(s.Retransmits), 100*s.RetransRatio))
	case s.RetransRatio > 0:
		tcp = append(tcp, fmt.Sprintf("%.2f%% of bytes sent again", 100*s.RetransRatio))
	}
	if len(tcp) > 0 {
		b.WriteString("  " + strings.Join(tcp, ", ") + "\n")
	}
	if s.Link > 0 {
		n := "N streams"
		if s.LinkStreams > 0 {
			n = metric.Plural(int64(s.LinkStreams), "stream")
		}
		fmt.Fprintf(b, "  %s: %s (the link)\n", n, metric.FormatByteRate(s.Link))
	}
	if s.ReceiverRmemMax > 0 || s.SenderWmemMax > 0 {
		fmt.Fprintf(b, "  tcp_rmem maximum on the replica's host %s; tcp_wmem maximum on the primary %s\n", bytesOrUnknown(s.ReceiverRmemMax), bytesOrUnknown(s.SenderWmemMax))
	}

	fmt.Fprintf(b, "\nFor a peak of %s:\n", metric.FormatHours(p.PeakDuration.D().Seconds()))
	caseRows(b, p.Cases, p.Link)

	w := p.Window
	if w.BDP > 0 {
		fmt.Fprintf(b, "\nThe window for the peak: %s × %s = %s in flight, × %.2f margin = %s; buffers of %s (the window ÷ %.1f)\n",
			metric.FormatByteRate(w.Rate), dur(w.RTT), metric.FormatDecimalBytes(w.BDP), w.Margin, metric.FormatDecimalBytes(w.Needed), metric.FormatBytes(w.Buffer), w.PayloadRatio)
		// Only what advisor.Tune made: a command there only raises.
		for _, t := range w.Tuning {
			fmt.Fprintf(b, "  %-28s %s\n", tuningLabel(t)+":", words.Tuning(t))
		}
	}

	if len(p.WhatIfs) > 0 {
		b.WriteString("\nWhat if:\n")
		for _, x := range p.WhatIfs {
			fmt.Fprintf(b, "  %s: one stream %s, limited by %s\n", x.What, metric.FormatByteRate(x.Capacity), words.Limit(x.LimitedBy))
			for _, bd := range x.Bounds {
				mark := "-"
				if !bd.Applies {
					mark = "×"
				}
				var w strings.Builder
				wrap(&w, bd.Formula, "      ", 96)
				b.WriteString("    " + mark + " " + strings.TrimPrefix(w.String(), "      "))
			}
			caseRows(b, x.Cases, x.Link)
		}
	}
	if len(p.Notes) > 0 {
		b.WriteString("\nThe model:\n")
		for _, n := range p.Notes {
			var w strings.Builder
			wrap(&w, n, "    ", 96)
			b.WriteString("  - " + strings.TrimPrefix(w.String(), "    "))
		}
	}
}

func caseRows(b *strings.Builder, cases []result.ReplicaCase, link *result.ReplicaCase) {
	const row = "  %-16s %11s %11s %11s %15s  %-22s %12s  %-26s %s\n"
	fmt.Fprintf(b, row, "stream", "log mean", "log peak", "capacity", "headroom m/p", "verdict", "queue grows", "RPO at the peak's end", "catch-up")
	all := cases
	if link != nil {
		all = append(append([]result.ReplicaCase{}, cases...), *link)
	}
	for i, c := range all {
		name := dbLabel(c.Database)
		if link != nil && i == len(all)-1 {
			name = "all (the link)"
		}
		growth, rpo := "-", "-"
		if c.Growth > 0 {
			growth = metric.FormatByteRate(c.Growth)
			rpo = fmt.Sprintf("%s (%s of log)", metric.FormatDecimalBytes(c.RPOBytes), metric.FormatHours(c.RPOSeconds))
		}
		catch := "-"
		switch {
		case c.CatchUpNever:
			catch = "never"
		case c.CatchUp != nil && *c.CatchUp > 0:
			catch = metric.FormatHours(*c.CatchUp)
		}
		fmt.Fprintf(b, row, name, metric.FormatByteRate(c.Mean), metric.FormatByteRate(c.Peak), metric.FormatByteRate(c.Capacity),
			ratio(c.HeadroomMean)+" / "+ratio(c.HeadroomPeak), verdictWords[c.Verdict], growth, rpo, catch)
	}
}

var verdictWords = map[string]string{
	result.VerdictKeepsUp:           "keeps up",
	result.VerdictCannotJudge:       "cannot judge",
	result.VerdictFallsBehindAtPeak: "FALLS BEHIND AT PEAK",
	result.VerdictFallsBehind:       "FALLS BEHIND",
}

func dbLabel(db string) string {
	if db == "" {
		return "(the server)"
	}
	return db
}

func ratio(h *float64) string {
	if h == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f×", *h)
}

func bytesOrUnknown(n int64) string {
	if n <= 0 {
		return "not known"
	}
	return metric.FormatBytes(n)
}

// tuningLabel names a tuning's host and OS: "Linux, the primary".
func tuningLabel(t result.Tuning) string {
	switch t.OS {
	case "linux":
		return "Linux, " + t.Host
	case "windows":
		return "Windows, " + t.Host
	}
	return strings.ToUpper(t.Host[:1]) + t.Host[1:]
}
