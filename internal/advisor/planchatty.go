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
)

// A chatty report sends its queries one after another in one session, each
// waiting for the answer to the last: its time is the queries' count times
// one query's, and one query is k round trips of the network plus the rest
// (the server's work, both programs and their stacks). Another network
// replaces the round trips and keeps the rest; no network takes less than
// a round trip between two programs on one host, so that is the most a
// faster one could save; bandwidth only shortens the time the query's bits
// take to send, microseconds for a small query.

// SameHostRTT is the floor when none is given: a TCP round trip between
// two programs on one host over loopback (`narrows net rr` on loopback
// read 21–32 µs at the mean on the testbed's 2-vCPU VM, the kernel's own
// RTT 8–11 µs).
const SameHostRTT = 20 * time.Microsecond

// SameHostFrom says where SameHostRTT comes from.
const SameHostFrom = "a TCP round trip between two programs on one host (loopback), typical; --assume floor=… for your own"

// Links are the rates the bandwidth finding compares: field report 002's
// cards.
var Links = []float64{1e9, 2.5e9, 10e9}

// frameOverhead is what each frame adds on the wire to a query's bytes:
// TCP and IPv4 headers with timestamps (52), Ethernet header and FCS (18),
// preamble and inter-frame gap (20). A frame carries at most mss bytes.
const (
	frameOverhead = 90
	mss           = 1448
)

// Field report 002 (a 1C performance audit): one session's queries per
// second with a SELECT of a 500-character literal, the same physical
// servers with three cards. Theirs, shown for context.
var fieldReport002 = []struct {
	link string
	qps  float64
}{{"1 GbE", 2500}, {"2.5 GbE", 3000}, {"10 GbE", 4000}}

const fieldReport002Source = "field report 002: physical servers, one session, SELECT of a 500-character literal; their figures, not measured by narrows"

// fieldReportRequest and fieldReportResponse are that query and its
// answer as PostgreSQL frames them, about.
const (
	fieldReportRequest  = 500 + 9 + 5
	fieldReportResponse = 500 + 64
)

// ChattyInput is what a chatty plan is asked: the figures, the queries,
// the round trips each makes, and the round trips to try instead.
type ChattyInput struct {
	Figures            result.ChattyFigures
	Queries            int64
	RoundTripsPerQuery int // 0 is 1
	RTTs               []time.Duration
}

// MaxRoundTripsPerQuery bounds --round-trips-per-query.
const MaxRoundTripsPerQuery = 100

// PlanChatty composes the plan. It fails only on a question it cannot
// answer: no network round trip, no queries.
func PlanChatty(in ChattyInput) (result.ChattyPlan, error) {
	f := in.Figures
	k := max(in.RoundTripsPerQuery, 1)
	p := result.ChattyPlan{Queries: in.Queries, RoundTripsPerQuery: k, Figures: f, Cases: []result.ChattyCase{},
		Bandwidth: []result.ChattyBandwidth{}, Reference: []result.ChattyReference{}, Notes: []string{}}
	switch {
	case in.Queries < 1:
		return p, errors.New("the queries to plan must be at least 1")
	case k > MaxRoundTripsPerQuery:
		return p, fmt.Errorf("round trips per query %d: use 1 to %d", k, MaxRoundTripsPerQuery)
	case f.NetworkRTT <= 0:
		return p, errors.New("no network round trip was measured or assumed: nothing to plan from")
	case f.Floor < 0:
		return p, errors.New("the floor round trip must not be negative")
	}
	for _, x := range in.RTTs {
		if x <= 0 {
			return p, fmt.Errorf("round trip %v: must be more than zero", x)
		}
	}
	m := chattyModel{f: f, n: float64(in.Queries)}
	now := m.at(result.ChattyNow, f.NetworkRTT.D(), k, nil)
	p.Cases = append(p.Cases, now)
	for _, x := range in.RTTs {
		p.Cases = append(p.Cases, m.at(result.ChattyRTT, x, k, &now))
	}
	r0 := f.NetworkRTT.D()
	if r0 > f.Floor.D() {
		p.Cases = append(p.Cases, m.at(result.ChattySameHost, f.Floor.D(), k, &now))
	}
	if k > 1 {
		p.Cases = append(p.Cases, m.at(result.ChattyOneRoundTrip, r0, 1, &now))
	}
	rt := m.n * float64(k)
	p.MostSaved = secs(rt * max(0, r0.Seconds()-f.Floor.D().Seconds()))
	if hi := f.NetworkRTTHigh; hi != nil && *hi > f.NetworkRTT {
		s := secs(rt * max(0, hi.D().Seconds()-f.Floor.D().Seconds()))
		p.MostSavedHigh = &s
	}
	for _, rate := range Links {
		one := serialization(f.RequestBytes, f.ResponseBytes, rate)
		p.Bandwidth = append(p.Bandwidth, result.ChattyBandwidth{LinkBitsPerSecond: rate, RoundTrip: secs(one), Total: secs(rt * one)})
	}
	for _, r := range fieldReport002 {
		p.Reference = append(p.Reference, result.ChattyReference{Link: r.link, QueriesPerSecond: r.qps, PerQuery: secs(1 / r.qps),
			Total: secs(m.n / r.qps), Source: fieldReport002Source})
	}
	p.Notes = append(p.Notes,
		fmt.Sprintf("Each query costs %s of the network and the rest (the server's work, both programs and their stacks), which another network leaves as it is; the queries go one after another in one session, each waiting for the last.",
			metric.Plural(int64(k), "round trip")))
	if k > 1 {
		p.Notes = append(p.Notes, "The rest is counted once per query: each further round trip also wakes both programs, a few tens of µs this model leaves out, so the time with several round trips is a little more than planned.")
	}
	if lo, hi := f.NetworkRTTLow, f.NetworkRTTHigh; lo != nil && hi != nil && *hi > *lo {
		p.Notes = append(p.Notes, fmt.Sprintf("The network was not measured apart from the queries: it takes between %s and %s of each; the plan uses %s, what the path costs as ping reads it, and gives the times at both ends. An agent beside the database (--to AGENT with --dsn) measures it as the query travels.",
			dur(lo.D()), dur(hi.D()), dur(f.NetworkRTT.D())))
	}
	if q, m := f.QueryRTT, f.QueryRTTMean; q != nil && m != nil && *m > *q && float64(*m-*q) > 0.1*float64(*q) {
		p.Notes = append(p.Notes, fmt.Sprintf("The queries' mean round trip (%s) is %s above their median (%s): a few slow ones (a packet sent again, a pause on either host). The plan is a typical run's, from the medians; a run as unlucky as the one measured takes %s more.",
			dur(m.D()), dur((*m-*q).D()), dur(q.D()), metric.FormatSeconds(float64(in.Queries)*(*m-*q).D().Seconds())))
	}
	if shorter := slices.ContainsFunc(p.Cases, func(c result.ChattyCase) bool {
		return c.Case != result.ChattyNow && c.Case != result.ChattyOneRoundTrip && c.RTT < f.NetworkRTT && c.TotalLow != nil
	}); shorter {
		p.Notes = append(p.Notes, "Across a shorter path the rest may be less than measured here: it holds what both programs pay to wake after the idle this path's round trip leaves (a halted CPU, caches other work took), which queries closer together may not pay; the low end of a shorter path's time is its wire alone.")
	}
	if f.ServerAndClient == nil {
		p.Notes = append(p.Notes, "The server's time per query is not in this plan (net rr measures the network alone): the times are the wire's, and the queries per second a ceiling. Measure it with --dsn, or give it: --assume server=150us.")
	}
	return p, nil
}

// chattyModel turns one query's figures into a run's times.
type chattyModel struct {
	f result.ChattyFigures
	n float64
}

// rest is one query's time besides the network's round trip when the
// network takes r: measured as a whole query less r, the two sum to the
// query, so a network at its low bound leaves more rest.
func (m chattyModel) rest(r time.Duration) float64 {
	if m.f.ServerAndClient == nil {
		return 0
	}
	return max(0, m.f.ServerAndClient.D().Seconds()+(m.f.NetworkRTT.D()-r).Seconds())
}

// at is the case of round trip x (the network's own for now: nil base)
// and k round trips per query.
func (m chattyModel) at(name string, x time.Duration, k int, base *result.ChattyCase) result.ChattyCase {
	r0 := m.f.NetworkRTT.D()
	rest := m.rest(r0)
	if lo, hi := m.f.NetworkRTTLow, m.f.NetworkRTTHigh; base != nil && name != result.ChattyOneRoundTrip && lo != nil && hi != nil && *hi > *lo {
		// Another network: what the query costs besides the path is
		// between the server's work beyond a round trip that does none
		// (the network at its high bound) and all of the query above the
		// kernel's RTT (at its low), which holds both programs' wake-ups.
		// Those grow with how long each slept: across the testbed's 30
		// ms line they were 0.5 ms of a SELECT 1, across its 1 ms line
		// 10 µs. Which end another network lands nearer is not known
		// from one line, so the plan takes the middle and gives both.
		rest = m.rest((*lo + *hi).D() / 2)
	}
	per := float64(k)*x.Seconds() + rest
	c := result.ChattyCase{Case: name, RTT: result.Seconds(x), RoundTripsPerQuery: k, PerQuery: secs(per),
		Wire: secs(m.n * float64(k) * x.Seconds()), Total: secs(m.n * per)}
	if m.f.ServerAndClient != nil {
		s := secs(m.n * rest)
		c.ServerAndClient = &s
	}
	if per > 0 {
		c.WireShare = float64(k) * x.Seconds() / per
		c.QueriesPerSecond = 1 / per
	}
	if base != nil {
		c.Saved = base.Total - c.Total
	}
	lo, hi := m.f.NetworkRTTLow, m.f.NetworkRTTHigh
	if lo == nil || hi == nil || *hi <= *lo {
		return c
	}
	// Now, the wire is the network at either bound; another network's
	// wire is known, and the rest moves with the bound.
	total := func(r time.Duration) float64 {
		xr := x
		if base == nil || name == result.ChattyOneRoundTrip {
			xr = r
		}
		return m.n * (float64(k)*xr.Seconds() + m.rest(r))
	}
	a, b := total(lo.D()), total(hi.D())
	low, high := min(a, b), max(a, b)
	if base != nil && name != result.ChattyOneRoundTrip && x < r0 {
		// A shorter path: the rest was read after the idle this path's
		// round trip leaves, and a program waking from a longer idle
		// pays more (a halted vCPU, caches others took): across the
		// testbed's 30 ms line a SELECT 1 had 115–680 µs besides the
		// path, across its 1 ms line 13 µs. Its work beyond an empty
		// query is no floor either, as that grew alike; the low end is
		// the wire alone.
		low = m.n * float64(k) * x.Seconds()
	}
	tl, th := secs(low), secs(high)
	c.TotalLow, c.TotalHigh = &tl, &th
	if base == nil || name == result.ChattyOneRoundTrip {
		wl, wh := secs(m.n*float64(k)*lo.D().Seconds()), secs(m.n*float64(k)*hi.D().Seconds())
		c.WireLow, c.WireHigh = &wl, &wh
	}
	return c
}

// serialization is the time a round trip's bits take at a link rate: the
// query and the answer in frames of at most mss bytes, each with its
// headers.
func serialization(request, response int64, bitsPerSecond float64) float64 {
	frames := func(b int64) int64 { return max(1, (b+mss-1)/mss) }
	wire := request + response + frameOverhead*(frames(request)+frames(response))
	return float64(wire) * 8 / bitsPerSecond
}

func secs(f float64) result.Seconds { return result.Seconds(math.Round(f * float64(time.Second))) }

// secRange is metric.FormatSecondsRange of two Seconds.
func secRange(lo, hi result.Seconds) string { return metric.FormatSecondsRange(lo.D(), hi.D()) }

// secOf is FormatSeconds of a Seconds.
func secOf(s result.Seconds) string { return metric.FormatSeconds(s.D().Seconds()) }

// queriesWord is "1 query", "5,000 queries".
func queriesWord(n int64) string {
	if n == 1 {
		return "1 query"
	}
	return metric.FormatCount(n) + " queries"
}

// ChattyFromRR reads a net rr run: the network's round trip (the mean, as
// a run of queries adds them up) and nothing of the server.
func ChattyFromRR(r *result.RR, where string) (result.ChattyFigures, error) {
	if r == nil || r.RoundTrips == 0 {
		return result.ChattyFigures{}, errors.New("the net rr run made no round trips")
	}
	rtt := r.Mean
	if rtt <= 0 {
		rtt = r.P50
	}
	return result.ChattyFigures{NetworkRTT: rtt,
		NetworkFrom: fmt.Sprintf("net rr %s: the mean of %s round trips, %s each way", where, metric.FormatCount(r.RoundTrips),
			requestResponse(r.Config.RequestBytes, r.Config.ResponseBytes)),
		Floor: result.Seconds(SameHostRTT), FloorFrom: SameHostFrom,
		RequestBytes: r.Config.RequestBytes, ResponseBytes: r.Config.ResponseBytes}, nil
}

func requestResponse(req, resp int64) string {
	if req == resp {
		return metric.FormatBytes(req)
	}
	return metric.FormatBytes(req) + " / " + metric.FormatBytes(resp)
}

// MinSplitSamples is the fewest queries, and the fewest round trips
// behind a bound, that a median is taken from: below it one slow sample
// moves the median, and the split is not judged.
const MinSplitSamples = 20

// ChattyFromDBPing reads a db ping run: a query's round trip, split into
// the network's (the agent's net rr when there was one, else the low
// bound, with both bounds) and the rest. Every figure of the split is a
// median, like with like: a query's mean carries its slow tail (one
// retransmitted packet among 65 queries across 30 ms lifts the mean by 4
// ms), which is neither what the server costs each query nor what the
// network does, and subtracting a median network from it once read
// "server and drivers 4.15 ms/query" for a SELECT 1 that takes 158 µs.
func ChattyFromDBPing(p *result.DBPing, where string) (result.ChattyFigures, error) {
	if p == nil || p.Queries == 0 || p.Mean <= 0 {
		return result.ChattyFigures{}, errors.New("the db ping run made no queries")
	}
	n := p.Network
	if n == nil {
		return result.ChattyFigures{}, errors.New("the db ping run has no network figure")
	}
	if p.Queries < MinSplitSamples {
		return result.ChattyFigures{}, fmt.Errorf("cannot judge: %s are too few to split a query's time between the network and the server: measure longer (--duration)",
			queriesWord(p.Queries))
	}
	f := result.ChattyFigures{Floor: result.Seconds(SameHostRTT), FloorFrom: SameHostFrom}
	query := p.P50
	if query <= 0 {
		query = p.Mean
	}
	mean := p.Mean
	f.QueryRTT, f.QueryRTTMean = &query, &mean
	switch {
	case n.NetworkP50 != nil:
		f.NetworkRTT = min(*n.NetworkP50, query)
		f.NetworkFrom = fmt.Sprintf("db ping %s: net rr through the agent at %s beside the database, p50 of %s round trips", where, n.Agent, metric.FormatCount(n.AgentRTTs))
	default:
		lo, hi := min(n.NetworkLow, query), min(n.NetworkHigh, query)
		highFrom := n.HighFromText()
		if (n.HighFrom == "empty_query" || n.HighFrom == "com_ping") && n.EmptyRoundTrips < MinSplitSamples {
			// A median of a few round trips is one of them: the only
			// bound left is the query itself, which the network cannot
			// exceed.
			hi = query
			highFrom = fmt.Sprintf("the query's own p50: the %s rested on %s, too few", strings.SplitN(highFrom, " p50", 2)[0],
				metric.Plural(n.EmptyRoundTrips, "round trip"))
		}
		if lo <= 0 {
			lo = hi
		}
		f.NetworkRTT = lo
		f.NetworkRTTLow, f.NetworkRTTHigh = &lo, &hi
		f.NetworkFrom = fmt.Sprintf("db ping %s: %s; at most %s, %s", where, n.LowFromText(), dur(hi.D()), highFrom)
	}
	if f.NetworkRTT <= 0 {
		return f, errors.New("the db ping run has no network figure")
	}
	rest := query - f.NetworkRTT
	f.ServerAndClient = &rest
	f.ServerAndClientFrom = fmt.Sprintf("a query's median round trip, %s over %s queries (%s), less the network's", dur(query.D()),
		metric.FormatCount(p.Queries), p.Config.Query)
	if p.Config.PayloadBytes > 0 {
		f.RequestBytes, f.ResponseBytes = p.Config.PayloadBytes+9+5, p.Config.PayloadBytes+64
	} else {
		f.RequestBytes, f.ResponseBytes = int64(len(p.Config.Query))+5, 64
	}
	return f, nil
}

// chattyPlan is the plan's findings: the wire now, each what-if, the most
// a faster network could save, fewer round trips, and why bandwidth does
// not matter.
func chattyPlan(p *result.ChattyPlan) []result.Finding {
	if len(p.Cases) == 0 {
		return nil
	}
	now := p.Cases[0]
	f := p.Figures
	n := queriesWord(p.Queries)
	known := f.ServerAndClient != nil
	var out []result.Finding

	wire, total := secOf(now.Wire), secOf(now.Total)
	share := fmt.Sprintf("%.0f%%", 100*now.WireShare)
	if now.WireLow != nil && now.TotalLow != nil {
		// The total grows with the network's share when a query makes
		// more than one round trip: each end of the wire goes with its
		// own total.
		wire, total = secRange(*now.WireLow, *now.WireHigh), secRange(*now.TotalLow, *now.TotalHigh)
		share = fmt.Sprintf("%.0f–%.0f%%", 100*now.WireLow.D().Seconds()/now.TotalLow.D().Seconds(), 100*now.WireHigh.D().Seconds()/now.TotalHigh.D().Seconds())
	}
	each := fmt.Sprintf("each query %s of %s", metric.Plural(int64(p.RoundTripsPerQuery), "round trip"), dur(now.RTT.D()))
	w := result.Finding{Code: "plan.chatty_wire", Severity: "info",
		Values: map[string]float64{"queries": float64(p.Queries), "wire_seconds": now.Wire.D().Seconds(), "total_seconds": now.Total.D().Seconds(),
			"wire_share_ratio": now.WireShare, "queries_per_second": now.QueriesPerSecond, "network_rtt_seconds": now.RTT.D().Seconds()}}
	if known {
		w.Summary = fmt.Sprintf("%s wait %s on the wire of %s (%s): %s queries/s in one session.",
			n, wire, total, share, metric.FormatCount(int64(now.QueriesPerSecond+0.5)))
		w.Detail = fmt.Sprintf("Now: %s (%s), and %s on the server and in the drivers (%s).", each, f.NetworkFrom,
			dur(time.Duration(float64(now.ServerAndClient.D())/float64(p.Queries))), f.ServerAndClientFrom)
	} else {
		w.Summary = fmt.Sprintf("%s wait %s on the wire, before any time on the server: at most %s queries/s in one session.",
			n, wire, metric.FormatCount(int64(now.QueriesPerSecond+0.5)))
		w.Detail = fmt.Sprintf("Now: %s (%s). The server's time is not known: measure it with --dsn or give it with --assume server=….", each, f.NetworkFrom)
	}
	out = append(out, w)

	for _, c := range p.Cases[1:] {
		switch c.Case {
		case result.ChattyRTT:
			out = append(out, whatIf(p, c, fmt.Sprintf("At a %s round trip%s", dur(c.RTT.D()), placeOf(c.RTT.D(), now.RTT.D()))))
		case result.ChattyOneRoundTrip:
			wi := whatIf(p, c, fmt.Sprintf("With 1 round trip per query instead of %d", p.RoundTripsPerQuery))
			wi.Code = "plan.chatty_round_trips"
			wi.Detail = "Several round trips a query come from a driver that prepares or describes each statement before it runs it (the extended protocol without pipelining), an ORM that wraps each query in its own BEGIN and COMMIT or reads rows a fetch at a time: pipelining, statements prepared once per session, or one statement in place of many remove them."
			out = append(out, wi)
		}
	}

	most := result.Finding{Code: "plan.chatty_most_saved", Severity: "info",
		Values: map[string]float64{"most_saved_seconds": p.MostSaved.D().Seconds(), "floor_rtt_seconds": f.Floor.D().Seconds()}}
	stays := "the server's time, not known here, stays"
	if known {
		stays = fmt.Sprintf("the %s on the server and in the drivers stay", secOf(*now.ServerAndClient))
		if hi := f.NetworkRTTHigh; hi != nil && *hi > f.NetworkRTT {
			// Read at this path's idle: queries closer together may
			// spend less besides the wire (the what-ifs' low ends).
			stays = fmt.Sprintf("up to the %s on the server and in the drivers stay", secOf(*now.ServerAndClient))
		}
	}
	switch {
	case p.MostSaved <= 0 && (p.MostSavedHigh == nil || *p.MostSavedHigh <= 0):
		most.Summary = fmt.Sprintf("A faster network cannot save anything here: the round trip (%s) costs no more than one between two programs on one host (%s).",
			dur(now.RTT.D()), dur(f.Floor.D()))
		if known {
			most.Detail = "The time is the server's and the drivers': look at the server's CPU and scheduling, a pooler or proxy in between, TLS, or the client machine."
		}
	default:
		saved := secOf(p.MostSaved)
		if p.MostSavedHigh != nil {
			saved = secRange(p.MostSaved, *p.MostSavedHigh)
			most.Values["most_saved_high_seconds"] = p.MostSavedHigh.D().Seconds()
		}
		of := secOf(now.Total)
		if now.TotalLow != nil {
			of = secRange(*now.TotalLow, *now.TotalHigh)
		}
		most.Summary = fmt.Sprintf("A faster network could save at most %s of the %s: every round trip cut to a same-host one (%s); %s.",
			saved, of, dur(f.Floor.D()), stays)
		most.Detail = "That is the application on the database's own host. Fewer round trips (fewer, larger queries) save more than any network: each one removed saves its whole round trip."
	}
	out = append(out, most)
	if bw, ok := bandwidthFinding(p, now); ok {
		out = append(out, bw)
	}
	return out
}

// placeOf names a round trip the way a DBA thinks of it, when it is
// shorter than now's: a same-rack or same-site one.
func placeOf(x, now time.Duration) string {
	switch {
	case x >= now:
		return ""
	case x <= 500*time.Microsecond:
		return " (the application server next to the database)"
	case x <= 2*time.Millisecond:
		return " (the same site)"
	}
	return ""
}

// whatIf is one what-if's finding.
func whatIf(p *result.ChattyPlan, c result.ChattyCase, what string) result.Finding {
	total := secOf(c.Total)
	if c.TotalLow != nil {
		total = secRange(*c.TotalLow, *c.TotalHigh)
	}
	diff := secOf(c.Saved) + " less than now"
	if c.Saved < 0 {
		diff = secOf(-c.Saved) + " more than now"
	}
	return result.Finding{Code: "plan.chatty_what_if", Severity: "info",
		Summary: fmt.Sprintf("%s: %s take %s (%s on the wire), %s queries/s in one session; %s.", what, queriesWord(p.Queries), total,
			secOf(c.Wire), metric.FormatCount(int64(c.QueriesPerSecond+0.5)), diff),
		Values: map[string]float64{"rtt_seconds": c.RTT.D().Seconds(), "round_trips_per_query": float64(c.RoundTripsPerQuery), "total_seconds": c.Total.D().Seconds(),
			"wire_seconds": c.Wire.D().Seconds(), "queries_per_second": c.QueriesPerSecond, "saved_seconds": c.Saved.D().Seconds()}}
}

// bandwidthFinding sets the serialization of a query at 1 and 10 Gbit/s
// against the query's time, with field report 002's figures for context.
func bandwidthFinding(p *result.ChattyPlan, now result.ChattyCase) (result.Finding, bool) {
	var slow, fast *result.ChattyBandwidth
	for i := range p.Bandwidth {
		switch p.Bandwidth[i].LinkBitsPerSecond {
		case 1e9:
			slow = &p.Bandwidth[i]
		case 10e9:
			fast = &p.Bandwidth[i]
		}
	}
	if slow == nil || fast == nil || now.PerQuery <= 0 {
		return result.Finding{}, false
	}
	k := float64(p.RoundTripsPerQuery)
	gain := k * (slow.RoundTrip.D() - fast.RoundTrip.D()).Seconds()
	f := result.Finding{Code: "plan.chatty_bandwidth", Severity: "info",
		Summary: fmt.Sprintf("Bandwidth cannot help: a query and its answer (%s) take %s to send at 1 Gbit/s and %s at 10 Gbit/s; ten times the bandwidth would save %s of each %s query (%s), %s of the %s.",
			requestResponse(p.Figures.RequestBytes, p.Figures.ResponseBytes), dur(slow.RoundTrip.D()), dur(fast.RoundTrip.D()),
			dur(secs(gain).D()), dur(now.PerQuery.D()), percent(gain/now.PerQuery.D().Seconds()), metric.FormatSeconds(gain*float64(p.Queries)), secOf(now.Total)),
		Values: map[string]float64{"serialization_1gbit_seconds": slow.RoundTrip.D().Seconds(), "serialization_10gbit_seconds": fast.RoundTrip.D().Seconds()}}
	if len(p.Reference) > 0 {
		var qps, per, tot []string
		for _, r := range p.Reference {
			qps = append(qps, metric.FormatCount(int64(r.QueriesPerSecond)))
			per = append(per, fmt.Sprintf("%.0f", r.PerQuery.D().Seconds()*1e6))
			tot = append(tot, fmt.Sprintf("%.2f", r.Total.D().Seconds()))
		}
		first, last := p.Reference[0], p.Reference[len(p.Reference)-1]
		bits := serialization(fieldReportRequest, fieldReportResponse, 1e9)
		f.Detail = fmt.Sprintf("What a faster card buys is a shorter round trip (its latency, its driver's, interrupt moderation), the network's share above. "+
			"For context, field report 002 (their figures, not narrows'): about %s queries/s in one session on %s with a 500-character SELECT, "+
			"%s µs a query, %s in %s s; %s µs apart from %s to %s where that query's bits take about %s at 1 Gbit/s: latency, not bandwidth.",
			strings.Join(qps, " / "), linksOf(p.Reference), strings.Join(per, " / "), queriesWord(p.Queries), strings.Join(tot, " / "),
			fmt.Sprintf("%.0f", (first.PerQuery-last.PerQuery).D().Seconds()*1e6), first.Link, last.Link, dur(secs(bits).D()))
	}
	return f, true
}

// percent is a small share: "0.4%", "under 0.1%".
func percent(r float64) string {
	if r < 0.001 {
		return "under 0.1%"
	}
	return fmt.Sprintf("%.1f%%", 100*r)
}

func linksOf(rs []result.ChattyReference) string {
	var l []string
	for _, r := range rs {
		l = append(l, strings.TrimSuffix(r.Link, " GbE"))
	}
	return strings.Join(l, " / ") + " GbE"
}
