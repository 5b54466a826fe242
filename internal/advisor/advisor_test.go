package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

func run(tp float64, cpuLocal, cpuRemote float64, tcp *result.TCPSummary) result.StreamRun {
	return result.StreamRun{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: tp,
		CPU: result.CPU{Local: cpuLocal, Remote: cpuRemote, Available: true}, TCP: tcp}
}

func codes(fs []result.Finding) string {
	var c []string
	for _, f := range fs {
		c = append(c, f.Code)
	}
	return strings.Join(c, ",")
}

func TestStreamVerdicts(t *testing.T) {
	rtt := result.Seconds(40 * time.Millisecond)
	cases := []struct {
		name string
		run  result.StreamRun
		want string // the limit finding's code
		text string
	}{
		{"window: stalled on the receiver", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, RwndLimited: 0.9, BDPBytes: 131072}), "stream.window_limited", "receiver's window 90%"},
		{"window: a paced sender keeps a whole window in flight", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, RwndLimited: 0.42, BDPBytes: 80000, SndWndBytes: 81920}), "stream.window_limited", "a whole window (80 KiB advertised"},
		{"link: far less in flight than the window", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, RwndLimited: 0.1, BDPBytes: 80000, SndWndBytes: 4 << 20}), "stream.link_limited", "Link-limited"},
		{"window: stalled on the send buffer", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, SndbufLimited: 0.7, RwndLimited: 0.1}), "stream.window_limited", "its own send buffer 70%"},
		{"cpu beats everything", run(30e9, 95, 40, &result.TCPSummary{RTT: rtt, RwndLimited: 0.9}), "stream.cpu_limited", "the client used 95%"},
		{"cpu on the agent", run(30e9, 40, 92, &result.TCPSummary{}), "stream.cpu_limited", "the agent used 92%"},
		{"loss", run(5e6, 5, 5, &result.TCPSummary{RTT: rtt, RetransRatio: 0.03, Retransmits: 412}), "stream.loss_limited", "3.0% of the bytes"},
		{"link", run(190e6, 10, 8, &result.TCPSummary{RTT: rtt, RetransRatio: 0.002}), "stream.link_limited", "filled the path"},
		{"no tcp_info", run(190e6, 10, 8, nil), "stream.limit_unknown", "not available"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := Advise(&result.Report{Stream: &result.Stream{Runs: []result.StreamRun{c.run}}})
			if len(fs) < 2 || fs[0].Code != "stream.single_stream_capacity" || fs[1].Code != c.want {
				t.Fatalf("findings %s, want capacity then %s", codes(fs), c.want)
			}
			if !strings.Contains(fs[1].Summary, c.text) {
				t.Fatalf("summary %q lacks %q", fs[1].Summary, c.text)
			}
		})
	}
}

func TestCapacityInDBATerms(t *testing.T) {
	fs := Advise(&result.Report{Stream: &result.Stream{Runs: []result.StreamRun{run(224e6, 5, 5, &result.TCPSummary{})}}})
	f := fs[0]
	if !strings.Contains(f.Summary, "224 Mbit/s = 28 MB/s") || !strings.Contains(f.Detail, "faster than 28 MB/s") {
		t.Fatalf("capacity finding: %q / %q", f.Summary, f.Detail)
	}
	if f.Values["throughput_bytes_per_second"] != 28e6 {
		t.Fatalf("values %v", f.Values)
	}
}

func TestComparison(t *testing.T) {
	cases := []struct {
		ratio    float64
		severity string
		text     string
	}{
		{8.5, "warning", "room that one stream cannot use"},
		{1.05, "info", "one stream already gets what the link gives"},
	}
	for _, c := range cases {
		s := &result.Stream{Runs: []result.StreamRun{run(1e8, 5, 5, &result.TCPSummary{})},
			Comparison: &result.Comparison{Single: 1e8, Aggregate: 1e8 * c.ratio, Streams: 8, Ratio: c.ratio}}
		fs := Advise(&result.Report{Stream: s})
		last := fs[len(fs)-1]
		if last.Code != "stream.parallel_comparison" || last.Severity != c.severity || !strings.Contains(last.Summary, c.text) {
			t.Errorf("ratio %v: %+v", c.ratio, last)
		}
	}
}

func TestWireOverhead(t *testing.T) {
	r := run(191.4e6, 5, 5, &result.TCPSummary{MSSBytes: 1448, RetransRatio: 0.001})
	r.HeaderBytes, r.WireThroughput = 66, 200e6
	fs := Advise(&result.Report{Stream: &result.Stream{Runs: []result.StreamRun{r}}})
	var got *result.Finding
	for i := range fs {
		if fs[i].Code == "stream.wire_overhead" {
			got = &fs[i]
		}
	}
	if got == nil || !strings.Contains(got.Summary, "66 bytes") || !strings.Contains(got.Summary, "1448-byte segment (4.4%)") {
		t.Fatalf("wire finding: %+v", got)
	}
}

func TestRRWireTime(t *testing.T) {
	r := &result.RR{Config: result.RRConfig{Queries: 5000}, RoundTrips: 1000, Rate: 500,
		Latency: result.Latency{Mean: result.Seconds(2 * time.Millisecond), P50: result.Seconds(2 * time.Millisecond), P99: result.Seconds(3 * time.Millisecond)}}
	fs := Advise(&result.Report{RR: r})
	if len(fs) != 1 || fs[0].Code != "rr.wire_time" || !strings.Contains(fs[0].Summary, "5,000 queries") || !strings.Contains(fs[0].Summary, "10.00 s") {
		t.Fatalf("rr findings: %+v", fs)
	}
	if fs[0].Values["wire_seconds"] != 10 || fs[0].Values["wire_p99_seconds"] != 15 {
		t.Fatalf("values %v", fs[0].Values)
	}
	r.P99 = result.Seconds(20 * time.Millisecond)
	if fs := Advise(&result.Report{RR: r}); len(fs) != 2 || fs[1].Code != "rr.tail" {
		t.Fatalf("tail not flagged: %s", codes(fs))
	}
	if fs := Advise(&result.Report{RR: &result.RR{}}); len(fs) != 0 {
		t.Fatalf("no round trips, yet findings: %s", codes(fs))
	}
}
