package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// chattySummary writes a chatty plan: the figures it was composed from,
// one row per case (now, then each what-if), what bandwidth adds, field
// report 002's figures for context, and the model's notes.
func chattySummary(b *strings.Builder, p *result.ChattyPlan) {
	f := p.Figures
	b.WriteString("Figures:\n")
	fig := func(name, value, from string) {
		var w strings.Builder
		wrap(&w, from, strings.Repeat(" ", 42), 110)
		fmt.Fprintf(b, "  %-24s %13s  %s", name, value, strings.TrimLeft(w.String(), " "))
	}
	fig("network round trip", dur(f.NetworkRTT), f.NetworkFrom)
	if f.ServerAndClient != nil {
		fig("server and drivers", dur(*f.ServerAndClient)+"/query", f.ServerAndClientFrom)
	} else {
		fig("server and drivers", "not known", "net rr measures the network alone: --dsn measures it, --assume server=… gives it")
	}
	fig("same-host round trip", dur(f.Floor), f.FloorFrom)
	fig("a query and its answer", metric.FormatBytes(f.RequestBytes)+" / "+metric.FormatBytes(f.ResponseBytes), "about, as the protocol frames them")

	fmt.Fprintf(b, "\n%s, %s each, one after another in one session:\n", queries(p.Queries), metric.Plural(int64(p.RoundTripsPerQuery), "round trip"))
	const row = "%-26s %9s %10s %13s %15s %15s %11s %9s\n"
	fmt.Fprintf(b, row, "case", "rtt", "per query", "on the wire", "server+drivers", "total", "queries/s", "saved")
	for i, c := range p.Cases {
		server := "-"
		if c.ServerAndClient != nil {
			server = secondsOf(*c.ServerAndClient)
		}
		wire, total := secondsOf(c.Wire), secondsOf(c.Total)
		if c.WireLow != nil {
			wire = secondsRange(*c.WireLow, *c.WireHigh)
		}
		if c.TotalLow != nil {
			total = secondsRange(*c.TotalLow, *c.TotalHigh)
		}
		saved := "-"
		if i > 0 {
			saved = secondsOf(c.Saved)
		}
		fmt.Fprintf(b, row, caseName(c), dur(c.RTT), dur(c.PerQuery), wire, server, total,
			metric.FormatCount(int64(c.QueriesPerSecond+0.5)), saved)
	}
	if len(p.Bandwidth) > 0 {
		b.WriteString("\nBandwidth: the bits of a query and its answer, with their headers:\n")
		for _, bw := range p.Bandwidth {
			fmt.Fprintf(b, "  %-12s %10s a round trip, %s for all of them\n", metric.FormatBitRate(bw.LinkBitsPerSecond), dur(bw.RoundTrip), secondsOf(bw.Total))
		}
	}
	if len(p.Reference) > 0 {
		b.WriteString("\nField report 002, for context (" + strings.TrimPrefix(p.Reference[0].Source, "field report 002: ") + "):\n")
		for _, r := range p.Reference {
			fmt.Fprintf(b, "  %-12s ~%s queries/s, %s a query: %s in %s\n", r.Link, metric.FormatCount(int64(r.QueriesPerSecond)),
				dur(r.PerQuery), queries(p.Queries), secondsOf(r.Total))
		}
	}
	modelNotes(b, p.Notes)
}

// caseName says what a case is, as a DBA reads the row.
func caseName(c result.ChattyCase) string {
	switch c.Case {
	case result.ChattyNow:
		return "now"
	case result.ChattyRTT:
		return "what if rtt " + dur(c.RTT)
	case result.ChattySameHost:
		return "same host (the most saved)"
	case result.ChattyOneRoundTrip:
		return "1 round trip per query"
	}
	return c.Case
}

// secondsOf is a run's time: "2.10 s", "12.5 s", "2.5 min".
func secondsOf(s result.Seconds) string { return metric.FormatSeconds(s.D().Seconds()) }

func secondsRange(lo, hi result.Seconds) string { return metric.FormatSecondsRange(lo.D(), hi.D()) }

func queries(n int64) string {
	if n == 1 {
		return "1 query"
	}
	return metric.FormatCount(n) + " queries"
}
