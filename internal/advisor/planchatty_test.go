package advisor

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

const (
	us = time.Microsecond
	ms = time.Millisecond
)

func sp(d time.Duration) *result.Seconds { s := result.Seconds(d); return &s }

// figures are a split with the default floor and SELECT 1's sizes.
func figures(rtt time.Duration, server *result.Seconds) result.ChattyFigures {
	return result.ChattyFigures{NetworkRTT: result.Seconds(rtt), NetworkFrom: "assumed", ServerAndClient: server,
		Floor: result.Seconds(SameHostRTT), RequestBytes: 13, ResponseBytes: 64}
}

func caseOf(t *testing.T, p result.ChattyPlan, name string, rtt time.Duration) result.ChattyCase {
	t.Helper()
	for _, c := range p.Cases {
		if c.Case == name && (name != result.ChattyRTT || c.RTT.D() == rtt) {
			return c
		}
	}
	t.Fatalf("no case %s (%v) in %+v", name, rtt, p.Cases)
	return result.ChattyCase{}
}

// TestPlanChatty holds the model to arithmetic done by hand: the time now
// is queries × (k round trips + the rest), another network replaces the
// round trips and keeps the rest, the most saved is the network above the
// floor, and never the server's time.
func TestPlanChatty(t *testing.T) {
	type want struct {
		caseName       string
		rtt            time.Duration
		total, wire    float64 // s
		low, high      float64 // s, the totals at the bounds (0: none)
		qps, savedSecs float64
	}
	cases := []struct {
		name      string
		in        ChattyInput
		want      []want
		mostSaved float64
		mostHigh  float64 // 0: none
		cases     int
	}{
		{name: "the issue's example: 5,000 queries, 420 µs round trips, 100 µs on the server",
			in: ChattyInput{Figures: figures(420*us, sp(100*us)), Queries: 5000, RTTs: []time.Duration{200 * us}},
			want: []want{
				{caseName: result.ChattyNow, rtt: 420 * us, total: 2.6, wire: 2.1, qps: 1923.08},
				{caseName: result.ChattyRTT, rtt: 200 * us, total: 1.5, wire: 1.0, qps: 3333.33, savedSecs: 1.1},
				{caseName: result.ChattySameHost, rtt: 20 * us, total: 0.6, wire: 0.1, qps: 8333.33, savedSecs: 2.0},
			},
			mostSaved: 2.0, cases: 3},
		{name: "an ORM's 3 round trips a query across 10 ms, the server not known",
			in: ChattyInput{Figures: figures(10*ms, nil), Queries: 5000, RoundTripsPerQuery: 3, RTTs: []time.Duration{200 * us, 20 * ms}},
			want: []want{
				{caseName: result.ChattyNow, rtt: 10 * ms, total: 150, wire: 150, qps: 33.33},
				{caseName: result.ChattyRTT, rtt: 200 * us, total: 3, wire: 3, qps: 1666.67, savedSecs: 147},
				{caseName: result.ChattyRTT, rtt: 20 * ms, total: 300, wire: 300, qps: 16.67, savedSecs: -150},
				{caseName: result.ChattyOneRoundTrip, rtt: 10 * ms, total: 50, wire: 50, qps: 100, savedSecs: 100},
			},
			mostSaved: 5000 * 3 * (10e-3 - 20e-6), cases: 5},
		{name: "db ping without an agent: the network between 100 and 300 µs of a 400 µs query",
			in: func() ChattyInput {
				f := figures(100*us, sp(300*us))
				f.NetworkRTTLow, f.NetworkRTTHigh, f.QueryRTT = sp(100*us), sp(300*us), sp(400*us)
				return ChattyInput{Figures: f, Queries: 1000, RTTs: []time.Duration{10 * ms}}
			}(),
			want: []want{
				// Now the query's 0.4 s is known; the wire is 0.1–0.3 s of it.
				{caseName: result.ChattyNow, rtt: 100 * us, total: 0.4, wire: 0.1, low: 0.4, high: 0.4, qps: 2500},
				// At 10 ms the rest is 300 µs (network at its low bound) or
				// 100 µs; the plan says the middle, 200 µs, and both.
				{caseName: result.ChattyRTT, rtt: 10 * ms, total: 10.2, wire: 10, low: 10.1, high: 10.3, qps: 98.04, savedSecs: -9.8},
				// A shorter path: the rest was read after a longer idle and
				// may shrink, so the low end is the wire alone.
				{caseName: result.ChattySameHost, rtt: 20 * us, total: 0.22, wire: 0.02, low: 0.02, high: 0.32, qps: 4545.45, savedSecs: 0.18},
			},
			mostSaved: 0.08, mostHigh: 0.28, cases: 3},
		{name: "already at the floor: loopback's 15 µs",
			in:    ChattyInput{Figures: figures(15*us, sp(60*us)), Queries: 5000, RTTs: []time.Duration{200 * us}},
			want:  []want{{caseName: result.ChattyNow, rtt: 15 * us, total: 0.375, wire: 0.075, qps: 13333.33}},
			cases: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanChatty(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Cases) != tc.cases {
				t.Errorf("%d cases, want %d: %+v", len(p.Cases), tc.cases, p.Cases)
			}
			for _, w := range tc.want {
				c := caseOf(t, p, w.caseName, w.rtt)
				what := w.caseName + " " + w.rtt.String()
				near(t, what+" total", c.Total.D().Seconds(), w.total, 1e-6)
				near(t, what+" wire", c.Wire.D().Seconds(), w.wire, 1e-6)
				near(t, what+" queries/s", c.QueriesPerSecond, w.qps, 0.01)
				near(t, what+" saved", c.Saved.D().Seconds(), w.savedSecs, 1e-6)
				if w.low > 0 {
					if c.TotalLow == nil || c.TotalHigh == nil {
						t.Fatalf("%s: no range: %+v", what, c)
					}
					near(t, what+" total low", c.TotalLow.D().Seconds(), w.low, 1e-6)
					near(t, what+" total high", c.TotalHigh.D().Seconds(), w.high, 1e-6)
				} else if c.TotalLow != nil {
					t.Errorf("%s: a range without bounds: %+v", what, c)
				}
				if (c.ServerAndClient == nil) != (tc.in.Figures.ServerAndClient == nil) {
					t.Errorf("%s: server time %v, figures %v", what, c.ServerAndClient, tc.in.Figures.ServerAndClient)
				}
			}
			near(t, "most saved", p.MostSaved.D().Seconds(), tc.mostSaved, 1e-6)
			if tc.mostHigh > 0 {
				if p.MostSavedHigh == nil {
					t.Fatal("no most saved at the high bound")
				}
				near(t, "most saved high", p.MostSavedHigh.D().Seconds(), tc.mostHigh, 1e-6)
			}
		})
	}
}

// TestPlanChattyBandwidth: a query's bits take microseconds at 1 Gbit/s
// (field report 002's 500-character SELECT: 514 B and 564 B, two frames
// of headers, 10.1 µs), and the report's own figures are carried as
// theirs.
func TestPlanChattyBandwidth(t *testing.T) {
	f := figures(400*us, sp(0))
	f.RequestBytes, f.ResponseBytes = fieldReportRequest, fieldReportResponse
	p, err := PlanChatty(ChattyInput{Figures: f, Queries: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Bandwidth) != 3 {
		t.Fatalf("bandwidth rows: %+v", p.Bandwidth)
	}
	near(t, "1 Gbit/s", p.Bandwidth[0].RoundTrip.D().Seconds(), (514+564+2*90)*8/1e9, 1e-9)
	near(t, "10 Gbit/s", p.Bandwidth[2].RoundTrip.D().Seconds(), (514+564+2*90)*8/10e9, 1e-9)
	near(t, "1 Gbit/s, 5,000 round trips", p.Bandwidth[0].Total.D().Seconds(), 5000*(514+564+2*90)*8/1e9, 1e-6)
	// A 3000-byte answer is three frames.
	near(t, "three frames", serialization(100, 3000, 1e9), float64(100+3000+4*90)*8/1e9, 1e-12)
	if len(p.Reference) != 3 || p.Reference[0].QueriesPerSecond != 2500 || p.Reference[2].QueriesPerSecond != 4000 {
		t.Fatalf("reference: %+v", p.Reference)
	}
	near(t, "5,000 queries at 2,500/s", p.Reference[0].Total.D().Seconds(), 2, 1e-9)
	near(t, "a query at 4,000/s", p.Reference[2].PerQuery.D().Seconds(), 250e-6, 1e-12)
	if !strings.Contains(p.Reference[0].Source, "field report 002") {
		t.Errorf("reference source %q", p.Reference[0].Source)
	}
}

// TestPlanChattyRefuses: questions with no answer.
func TestPlanChattyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   ChattyInput
		want string
	}{
		{"no queries", ChattyInput{Figures: figures(ms, nil)}, "at least 1"},
		{"no network", ChattyInput{Figures: figures(0, sp(us)), Queries: 1}, "no network round trip"},
		{"too many round trips", ChattyInput{Figures: figures(ms, nil), Queries: 1, RoundTripsPerQuery: 101}, "use 1 to 100"},
		{"a zero what-if", ChattyInput{Figures: figures(ms, nil), Queries: 1, RTTs: []time.Duration{0}}, "more than zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := PlanChatty(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestChattyFindings: the findings say it in a DBA's words, with the
// figures.
func TestChattyFindings(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   ChattyInput
		want []string // in the findings' summaries, in order
	}{
		{"the issue's example", ChattyInput{Figures: figures(420*us, sp(100*us)), Queries: 5000, RTTs: []time.Duration{200 * us}},
			[]string{"5,000 queries wait 2.10 s on the wire of 2.60 s (81%): 1,923 queries/s in one session.",
				"At a 200 µs round trip (the application server next to the database): 5,000 queries take 1.50 s (1.00 s on the wire), 3,333 queries/s in one session; 1.10 s less than now.",
				"A faster network could save at most 2.00 s of the 2.60 s: every round trip cut to a same-host one (20.0 µs); the 0.50 s on the server and in the drivers stay.",
				"Bandwidth cannot help: a query and its answer (13 B / 64 B) take"}},
		{"net rr alone, 3 round trips", ChattyInput{Figures: figures(10*ms, nil), Queries: 5000, RoundTripsPerQuery: 3, RTTs: []time.Duration{20 * ms}},
			[]string{"5,000 queries wait 2.5 min on the wire, before any time on the server: at most 33 queries/s in one session.",
				"At a 20.0 ms round trip: 5,000 queries take 5.0 min (5.0 min on the wire), 17 queries/s in one session; 2.5 min more than now.",
				"With 1 round trip per query instead of 3: 5,000 queries take 50.0 s (50.0 s on the wire), 100 queries/s in one session; 100.0 s less than now.",
				"the server's time, not known here, stays."}},
		{"bounds", func() ChattyInput {
			f := figures(100*us, sp(300*us))
			f.NetworkRTTLow, f.NetworkRTTHigh = sp(100*us), sp(300*us)
			return ChattyInput{Figures: f, Queries: 1000, RTTs: []time.Duration{10 * ms}}
		}(), []string{"1,000 queries wait 0.10–0.30 s on the wire of 0.40 s (25–75%)",
			"take 10.1–10.3 s (10.0 s on the wire)", "could save at most 0.08–0.28 s of the 0.40 s"}},
		{"at the floor", ChattyInput{Figures: figures(15*us, sp(60*us)), Queries: 5000},
			[]string{"A faster network cannot save anything here: the round trip (15.0 µs) costs no more than one between two programs on one host (20.0 µs)."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanChatty(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			fs := Advise(&result.Report{ChattyPlan: &p})
			var all []string
			for _, f := range fs {
				all = append(all, f.Summary)
				if f.Values == nil {
					t.Errorf("%s: no values", f.Code)
				}
			}
			text := strings.Join(all, "\n")
			at := 0
			for _, w := range tc.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("findings lack (in order) %q:\n%s", w, text)
				}
				at += i + len(w)
			}
		})
	}
}

// TestChattyFrom: the figures read from a net rr and a db ping run.
func TestChattyFrom(t *testing.T) {
	t.Run("net rr: the mean round trip, nothing of the server", func(t *testing.T) {
		f, err := ChattyFromRR(&result.RR{RoundTrips: 100, Latency: result.Latency{Mean: result.Seconds(2 * ms), P50: result.Seconds(1900 * us)},
			Config: result.RRConfig{RequestBytes: 500, ResponseBytes: 64}}, "to db1:7447")
		if err != nil || f.NetworkRTT.D() != 2*ms || f.ServerAndClient != nil || f.RequestBytes != 500 || f.Floor.D() != SameHostRTT {
			t.Fatalf("%+v, %v", f, err)
		}
		if _, err := ChattyFromRR(&result.RR{}, ""); err == nil {
			t.Fatal("a run with no round trips gave figures")
		}
	})
	ping := func(n *result.NetworkSplit) *result.DBPing {
		return &result.DBPing{Queries: 1000, Latency: result.Latency{Mean: result.Seconds(2200 * us), P50: result.Seconds(2100 * us)},
			Network: n, Config: result.DBPingConfig{Query: "SELECT 1"}}
	}
	t.Run("db ping with an agent: its round trip, the rest the server's", func(t *testing.T) {
		agent := result.Seconds(2 * ms)
		f, err := ChattyFromDBPing(ping(&result.NetworkSplit{Method: "agent_rr", NetworkP50: &agent, Agent: "db1:7447", AgentRTTs: 500,
			NetworkLow: result.Seconds(1950 * us), NetworkHigh: result.Seconds(2050 * us)}), "on db1")
		if err != nil || f.NetworkRTT.D() != 2*ms || f.ServerAndClient.D() != 100*us || f.NetworkRTTLow != nil || f.RequestBytes != 13 {
			t.Fatalf("%+v, %v", f, err)
		}
	})
	t.Run("db ping without: the low bound, both bounds kept", func(t *testing.T) {
		f, err := ChattyFromDBPing(ping(&result.NetworkSplit{Method: "bounds", LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query", EmptyRoundTrips: 100,
			NetworkLow: result.Seconds(1950 * us), NetworkHigh: result.Seconds(2050 * us)}), "on db1")
		if err != nil || f.NetworkRTT.D() != 1950*us || f.ServerAndClient.D() != 150*us || f.NetworkRTTHigh.D() != 2050*us || f.QueryRTT.D() != 2100*us {
			t.Fatalf("%+v, %v", f, err)
		}
		if _, err := ChattyFromDBPing(ping(nil), ""); err == nil {
			t.Fatal("a run with no network figure gave figures")
		}
	})
	// Issue 25 §2.5: across 30 ms one query of 65 waited for a packet sent
	// again; the mean rose by 4 ms while the median held. The server's
	// time comes from the medians, and the plan says the tail apart.
	t.Run("db ping with a slow tail: the split from the medians", func(t *testing.T) {
		agent := result.Seconds(30 * ms)
		p := &result.DBPing{Queries: 65, Latency: result.Latency{Mean: result.Seconds(34500 * us), P50: result.Seconds(30200 * us)},
			Network: &result.NetworkSplit{Method: "agent_rr", NetworkP50: &agent, Agent: "db1:7447", AgentRTTs: 60}, Config: result.DBPingConfig{Query: "SELECT 1"}}
		f, err := ChattyFromDBPing(p, "on db1")
		if err != nil || f.ServerAndClient.D() != 200*us || f.QueryRTTMean.D() != 34500*us {
			t.Fatalf("%+v, %v", f, err)
		}
		plan, err := PlanChatty(ChattyInput{Figures: f, Queries: 300, RTTs: []time.Duration{ms}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := plan.Cases[1].PerQuery.D(), ms+200*us; got != want {
			t.Errorf("at 1 ms a query takes %v, want %v: the tail is not the server's", got, want)
		}
		if !slices.ContainsFunc(plan.Notes, func(n string) bool { return strings.Contains(n, "above their median") }) {
			t.Errorf("the tail is not noted: %q", plan.Notes)
		}
	})
	t.Run("db ping whose bound rests on few round trips: the query bounds the network", func(t *testing.T) {
		f, err := ChattyFromDBPing(ping(&result.NetworkSplit{Method: "bounds", LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query", EmptyRoundTrips: 9,
			EmptyRTTP50: result.Seconds(2000 * us), NetworkLow: result.Seconds(1950 * us), NetworkHigh: result.Seconds(2000 * us)}), "on db1")
		if err != nil || f.NetworkRTTHigh.D() != 2100*us || !strings.Contains(f.NetworkFrom, "9 round trips, too few") {
			t.Fatalf("%+v, %v", f, err)
		}
	})
	t.Run("db ping of too few queries: cannot judge", func(t *testing.T) {
		p := ping(&result.NetworkSplit{Method: "bounds", NetworkLow: result.Seconds(1950 * us), NetworkHigh: result.Seconds(2050 * us), EmptyRoundTrips: 100})
		p.Queries = MinSplitSamples - 1
		if _, err := ChattyFromDBPing(p, "on db1"); err == nil || !strings.Contains(err.Error(), "cannot judge") {
			t.Fatalf("%d queries split: %v", p.Queries, err)
		}
	})
}
