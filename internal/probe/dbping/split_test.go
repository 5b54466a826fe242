package dbping

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// TestSplitBounds: the low bound is the kernel's handshake RTT, or, where
// it cannot be read, the fastest connect call less one to a local
// listener; the high bound an empty round trip's p50, or the fastest query
// where the engine has none; an agent's figure is the split itself.
func TestSplitBounds(t *testing.T) {
	us := func(v float64) time.Duration { return time.Duration(v * float64(time.Microsecond)) }
	empty := func(vs ...float64) *metric.Histogram {
		h := metric.NewHistogram()
		for _, v := range vs {
			h.Record(us(v))
		}
		return h
	}
	res := func(p50 time.Duration) *result.DBPing {
		return &result.DBPing{Queries: 1000, Latency: result.Latency{Min: result.Seconds(p50 - us(12)), P50: result.Seconds(p50)}}
	}
	cases := []struct {
		name              string
		p50               time.Duration
		b                 bounds
		agent             *result.RR
		low, high         time.Duration
		lowFrom, highFrom string
		method            string
	}{
		{"kernel RTT and an empty query", us(45), bounds{handshakes: []handshake{{us(150), us(12)}, {us(90), us(10)}, {us(400), us(11)}},
			empty: empty(30, 31, 29), emptyFrom: "empty_query"}, nil, us(11), us(30), "tcp_handshake_rtt", "empty_query", "bounds"},
		{"connect calls less the local one", us(10150), bounds{handshakes: []handshake{{dial: us(10100)}, {dial: us(10060)}}, local: []time.Duration{us(70), us(60)},
			empty: empty(10080), emptyFrom: "com_ping"}, nil, us(10000), us(10080), "tcp_connect_minus_local", "com_ping", "bounds"},
		{"no cheaper round trip", us(45), bounds{handshakes: []handshake{{us(90), us(10)}}}, nil, us(10), us(33), "tcp_handshake_rtt", "fastest_query", "bounds"},
		// Wine's connect calls took 1.8 ms against a 0.8 ms local one and
		// 430 µs queries: the difference bounds nothing.
		{"connects slower than a query", us(430), bounds{handshakes: []handshake{{dial: us(1794)}, {dial: us(3958)}}, local: []time.Duration{us(825)},
			empty: empty(354), emptyFrom: "empty_query"}, nil, 0, us(354), "slower_than_query", "empty_query", "bounds"},
		{"no probes", us(45), bounds{empty: empty(30), emptyFrom: "empty_query"}, nil, 0, us(30), "none", "empty_query", "bounds"},
		// An agent slower than the database's own cheapest round trip: the
		// network is at most that.
		{"agent above the high bound", us(123), bounds{handshakes: []handshake{{us(90), us(13)}}, empty: empty(30), emptyFrom: "com_ping"},
			&result.RR{RoundTrips: 1000, Latency: result.Latency{P50: result.Seconds(us(102))}}, us(13), us(30), "tcp_handshake_rtt", "com_ping", "agent_rr"},
		// Spaced-out handshakes that woke idle CPUs read above the path's
		// own back-to-back round trips (15.0 against 12.7 µs on a
		// loopback): they bound nothing.
		{"handshakes slower than the agent", us(45), bounds{handshakes: []handshake{{us(90), us(15)}}, empty: empty(30), emptyFrom: "empty_query"},
			&result.RR{RoundTrips: 1000, Latency: result.Latency{P50: result.Seconds(us(12.7))}}, 0, us(30), "slower_than_agent", "empty_query", "agent_rr"},
		// ...and do not raise the high bound on their way out (an empty
		// query's 14.6 µs stays the high bound, not the handshakes' 15).
		{"handshakes slower than the agent, above the empty query", us(45), bounds{handshakes: []handshake{{us(90), us(15)}}, empty: empty(14.6), emptyFrom: "empty_query"},
			&result.RR{RoundTrips: 1000, Latency: result.Latency{P50: result.Seconds(us(12.7))}}, 0, us(14.6), "slower_than_agent", "empty_query", "agent_rr"},
		{"agent", us(45), bounds{handshakes: []handshake{{us(90), us(10)}}, empty: empty(30), emptyFrom: "empty_query"},
			&result.RR{RoundTrips: 1000, Latency: result.Latency{P50: result.Seconds(us(22))}}, us(10), us(30), "tcp_handshake_rtt", "empty_query", "agent_rr"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg Config
			if c.agent != nil {
				cfg.Agent = func(context.Context) (*result.RR, error) { return c.agent, nil }
			}
			r := res(c.p50)
			ns := split(context.Background(), cfg, c.b, r)
			// The empty round trips come from an HDR histogram: 0.1%.
			if ns.NetworkLow.D() != c.low || math.Abs(float64(ns.NetworkHigh.D()-c.high)) > float64(c.high)/1000 || ns.LowFrom != c.lowFrom || ns.HighFrom != c.highFrom || ns.Method != c.method {
				t.Fatalf("got %v (%s) – %v (%s), %s; want %v (%s) – %v (%s), %s", ns.NetworkLow.D(), ns.LowFrom, ns.NetworkHigh.D(), ns.HighFrom, ns.Method,
					c.low, c.lowFrom, c.high, c.highFrom, c.method)
			}
			if got, want := ns.NetworkShareHigh, float64(ns.NetworkHigh)/float64(r.P50); got != want {
				t.Fatalf("high share %v, want %v", got, want)
			}
			if (ns.NetworkP50 != nil) != (c.agent != nil) {
				t.Fatalf("a point figure %v with agent %v", ns.NetworkP50, c.agent)
			}
			if c.agent != nil {
				// The agent's round trip, but never above the high bound.
				want := min(c.agent.P50.D(), ns.NetworkHigh.D())
				if ns.NetworkP50.D() != want || *ns.NetworkShare != float64(want)/float64(c.p50) || ns.AgentAboveHigh != (c.agent.P50.D() > ns.NetworkHigh.D()) {
					t.Fatalf("agent split %v %v (above the high bound: %v), want %v", ns.NetworkP50.D(), *ns.NetworkShare, ns.AgentAboveHigh, want)
				}
			}
		})
	}
	if split(context.Background(), Config{}, bounds{}, &result.DBPing{}) != nil {
		t.Fatal("a split without queries")
	}
}
