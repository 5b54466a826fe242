package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
)

func run(tp float64, cpuLocal, cpuRemote float64, tcp *result.TCPSummary) result.StreamRun {
	return result.StreamRun{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: tp,
		CPU: result.CPU{Local: cpuLocal, Remote: cpuRemote, Available: true}, TCP: tcp}
}

// withCores gives a run each end's busiest core.
func withCores(r result.StreamRun, local, remote *result.CoreLoad) result.StreamRun {
	r.Cores = &result.Cores{Local: local, Remote: remote}
	return r
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
		{"window: a paced sender keeps a whole window in flight", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, RwndLimited: 0.42, BDPBytes: 80000, SndWndBytes: 81920}), "stream.window_limited", "reached the peer's window (80 KiB): a whole window crossed"},
		{"link: far less in flight than the window", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, RwndLimited: 0.05, BDPBytes: 80000, SndWndBytes: 4 << 20}), "stream.link_limited", "Link-limited"},
		{"window: 28% stalls is not link-limited", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, RwndLimited: 0.28, BDPBytes: 80000, SndWndBytes: 4 << 20}), "stream.window_limited", "Partly window-limited: the sender waited on the receiver's window 28%"},
		{"window: stalled on the send buffer", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, SndbufLimited: 0.7, RwndLimited: 0.1}), "stream.window_limited", "its own send buffer 70%"},
		{"cpu beats everything", run(30e9, 95, 40, &result.TCPSummary{RTT: rtt, RwndLimited: 0.9}), "stream.cpu_limited", "the client used 95%"},
		{"cpu on the agent", run(30e9, 40, 92, &result.TCPSummary{}), "stream.cpu_limited", "the agent used 92%"},
		{"loss", run(5e6, 5, 5, &result.TCPSummary{RTT: rtt, RetransRatio: 0.03, Retransmits: 412}), "stream.loss_limited", "3.00% of the bytes"},
		{"link", run(190e6, 10, 8, &result.TCPSummary{RTT: rtt, RetransRatio: 0.002}), "stream.link_limited", "filled the path"},
		{"link, the agent's CPU unknown", func() result.StreamRun {
			r := run(190e6, 0, 0, &result.TCPSummary{RTT: rtt})
			r.CPU.Available = false
			return r
		}(), "stream.link_limited", "CPU not measured"},
		{"no tcp_info", run(190e6, 10, 8, nil), "stream.limit_unknown", "not available"},
		{"a CPU limit that held the client off the CPU", func() result.StreamRun {
			r := run(900e6, 20, 30, &result.TCPSummary{RTT: rtt, RwndLimited: 0.6})
			r.CPU.LocalLimitCores, r.CPU.LocalThrottledShare = 0.2, 0.93
			return r
		}(), "stream.cpu_limited", "a CPU limit of 0.2 of a core (its cgroup's quota), and used it up in 93%"},
		{"a CPU limit the client stayed within: the link", func() result.StreamRun {
			r := run(190e6, 10, 8, &result.TCPSummary{RTT: rtt, RetransRatio: 0.002})
			r.CPU.LocalLimitCores, r.CPU.LocalThrottledShare = 2, 0.01
			return r
		}(), "stream.link_limited", "filled the path"},
		{"link, on a Windows that gives no stall times (TCP_INFO_v0)", run(190e6, 10, 8, &result.TCPSummary{RTT: rtt, StallsUnknown: true}), "stream.link_limited", "stall times not reported by the sender's system"},
		{"a full core at the agent, most of it packets", withCores(run(7.3e9, 30, 40, &result.TCPSummary{RTT: rtt}), nil,
			&result.CoreLoad{OS: "linux", Cores: 2, Core: 0, Busy: 1, User: 0.01, System: 0.26, SoftIRQ: 0.73, OthersBusy: 0.03}),
			"stream.packet_core_limited", "core 0 at the agent (receiving) was busy 100% of the run, 73% of it in softirq and interrupts (26% system, 1% user; its other cores 3% busy on average)"},
		{"a full core here, on Windows, even with a thread at 95%", withCores(run(9e9, 95, 40, &result.TCPSummary{RTT: rtt}),
			&result.CoreLoad{OS: "windows", Cores: 8, Core: 3, Busy: 0.99, User: 0.2, System: 0.4, SoftIRQ: 0.3, IRQ: 0.09, OthersBusy: 0.1}, nil),
			"stream.packet_core_limited", "core 3 at this host (sending) was busy 99% of the run, 39% of it in DPCs and interrupts"},
		{"one machine's core at both ends, said once", withCores(run(7.3e9, 30, 40, &result.TCPSummary{RTT: rtt}),
			&result.CoreLoad{OS: "linux", Cores: 2, Core: 0, Busy: 1, User: 0.01, System: 0.27, SoftIRQ: 0.72, OthersBusy: 0.03},
			&result.CoreLoad{OS: "linux", Cores: 2, Core: 0, Busy: 1, User: 0.01, System: 0.26, SoftIRQ: 0.73, OthersBusy: 0.03}),
			"stream.packet_core_limited", "Core-limited: core 0 at this host and at the agent (both ends' figures alike: one machine, it seems) was busy 100% of the run, 73% of it"},
		{"two machines' cores, each said", withCores(run(7.3e9, 30, 40, &result.TCPSummary{RTT: rtt}),
			&result.CoreLoad{OS: "linux", Cores: 2, Core: 0, Busy: 0.98, System: 0.6, SoftIRQ: 0.38},
			&result.CoreLoad{OS: "linux", Cores: 16, Core: 5, Busy: 1, System: 0.27, SoftIRQ: 0.73}),
			"stream.packet_core_limited", "core 0 at this host (sending) was busy 98% of the run, 38% of it in softirq and interrupts (60% system, 0% user; its other cores 0% busy on average); core 5 at the agent (receiving)"},
		{"a full core taking the NIC's interrupts", withCores(run(9.1e9, 40, 60, &result.TCPSummary{RTT: rtt}), nil,
			&result.CoreLoad{OS: "linux", Cores: 16, Core: 3, Busy: 1, System: 0.2, SoftIRQ: 0.7, IRQ: 0.1, NIC: "eth0",
				NICInterrupts: []result.CoreIRQ{{IRQ: 41, Name: "eth0-TxRx-3", PerSecond: 41234.5}}}),
			"stream.packet_core_limited", "core 3 at the agent (receiving) was busy 100% of the run, 80% of it in softirq and interrupts"},
		{"a full core of user work (another program): not the packets", withCores(run(190e6, 10, 8, &result.TCPSummary{RTT: rtt, RetransRatio: 0.002}), nil,
			&result.CoreLoad{OS: "linux", Cores: 2, Core: 1, Busy: 1, User: 0.97, System: 0.02, SoftIRQ: 0.01}),
			"stream.link_limited", "filled the path"},
		{"packet work on a core with room left: not held", withCores(run(190e6, 10, 8, &result.TCPSummary{RTT: rtt, RetransRatio: 0.002}),
			&result.CoreLoad{OS: "linux", Cores: 2, Core: 1, Busy: 0.9, System: 0.2, SoftIRQ: 0.7}, nil),
			"stream.link_limited", "filled the path"},
		{"window on TCP_INFO_v0: the full window still tells", run(26e6, 5, 5, &result.TCPSummary{RTT: rtt, BDPBytes: 80000, SndWndBytes: 81920, StallsUnknown: true}), "stream.window_limited", "reached the peer's window"},
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
		{1.05, "info", "1.05× one stream: more connections carry little more"},
		{1.02, "info", "1.02× one stream: more connections carry no more"},
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
	for _, c := range []struct {
		name         string
		header, link int64
		want         string
	}{
		{"Ethernet", 66, 14, "On the wire ≈ 200 Mbit/s: payload 191 Mbit/s plus 66 bytes of Ethernet/IP/TCP headers per 1448-byte segment (4.4%)"},
		// A TUN device (the testbed's line, a VPN) carries bare IP packets:
		// no Ethernet header to count, and no "wire" to claim.
		{"TUN", 52, 0, "In IP packets ≈ 200 Mbit/s: payload 191 Mbit/s plus 52 bytes of IP/TCP headers per 1448-byte segment (3.5%)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(191.4e6, 5, 5, &result.TCPSummary{MSSBytes: 1448, RetransRatio: 0.001})
			r.HeaderBytes, r.LinkHeaderBytes, r.WireThroughput = c.header, c.link, 200e6
			fs := Advise(&result.Report{Stream: &result.Stream{Runs: []result.StreamRun{r}}})
			var got *result.Finding
			for i := range fs {
				if fs[i].Code == "stream.wire_overhead" {
					got = &fs[i]
				}
			}
			if got == nil || !strings.Contains(got.Summary, c.want) {
				t.Fatalf("wire finding: %+v, want %q", got, c.want)
			}
		})
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

// stream advises a single run, and N streams at ratio (0: none ran).
func streamReport(one result.StreamRun, ratio float64, sameHost bool) *result.Report {
	s := &result.Stream{Runs: []result.StreamRun{one}, SameHost: sameHost}
	if ratio > 0 {
		s.Comparison = &result.Comparison{Direction: one.Direction, Single: one.Throughput, Aggregate: one.Throughput * ratio, Streams: 4, Ratio: ratio}
	}
	return &result.Report{Stream: s}
}

func finding(fs []result.Finding, prefix string) *result.Finding {
	for i := range fs {
		if strings.HasPrefix(fs[i].Code, prefix) {
			return &fs[i]
		}
	}
	return nil
}

// TestStreamVerdictsAgree: the limit verdict and the N-stream comparison
// are read from one set of figures, so that no run is called link-limited
// while N streams outran it, and no window verdict is told to raise a
// window that N windows did not overcome (issue 12: "Link-limited … the rate
// of the link" beside "4 streams carried 15.4 Gbit/s, 1.4× one stream").
func TestStreamVerdictsAgree(t *testing.T) {
	rtt := result.Seconds(200 * time.Microsecond)
	cases := []struct {
		name      string
		tcp       *result.TCPSummary
		cpu       float64
		ratio     float64
		sameHost  bool
		limit     string // the limit finding's code
		limitText string
		cmpText   string
	}{
		{"no stalls, N streams outran one: a per-stream cap, not the link", &result.TCPSummary{RTT: rtt}, 40, 1.4, false,
			"stream.per_stream_limited", "Per-stream limit: 4 streams carried", "there is room that one stream cannot use"},
		{"no stalls, N streams no faster: the link", &result.TCPSummary{RTT: rtt}, 40, 1.04, false,
			"stream.link_limited", "Link-limited", "more connections carry no more"},
		{"window stalls, N windows carried more", &result.TCPSummary{RTT: rtt, RwndLimited: 0.28}, 40, 2.5, false,
			"stream.window_limited", "Partly window-limited", "each stream brings its own"},
		{"window stalls that N windows did not overcome cost no rate", &result.TCPSummary{RTT: rtt, RwndLimited: 0.62}, 40, 1.03, false,
			"stream.link_limited", "window stalls cost no rate", "more connections carry no more"},
		{"loopback, N streams outran one", &result.TCPSummary{RTT: rtt}, 44, 1.4, true,
			"stream.host_limited", "No network was crossed", "this machine has cores"},
		{"loopback, N streams no faster", &result.TCPSummary{RTT: rtt}, 44, 1.04, true,
			"stream.host_limited", "not the rate of a link", "On one machine its CPUs are the limit"},
		{"CPU-bound one stream, N threads no faster: the machines", &result.TCPSummary{RTT: rtt}, 97, 1.02, false,
			"stream.cpu_limited", "CPU-limited", "The machines' CPUs are the limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := Advise(streamReport(run(12e9, c.cpu, c.cpu/2, c.tcp), c.ratio, c.sameHost))
			lim, cmp := fs[1], finding(fs, "stream.parallel_comparison")
			if lim.Code != c.limit || !strings.Contains(lim.Summary+" "+lim.Detail, c.limitText) {
				t.Fatalf("limit %s %q / %q, want %s with %q", lim.Code, lim.Summary, lim.Detail, c.limit, c.limitText)
			}
			if cmp == nil || !strings.Contains(cmp.Summary+" "+cmp.Detail, c.cmpText) {
				t.Fatalf("comparison %+v, want %q", cmp, c.cmpText)
			}
		})
	}
	// Over a grid of figures, the two findings never disagree.
	for _, stall := range []float64{0, 0.05, 0.28, 0.6} {
		for _, retr := range []float64{0, 0.03} {
			for _, cpu := range []float64{30, 95} {
				for _, ratio := range []float64{1.0, 1.29, 1.31, 4} {
					for _, same := range []bool{false, true} {
						fs := Advise(streamReport(run(12e9, cpu, 10, &result.TCPSummary{RTT: rtt, RwndLimited: stall, RetransRatio: retr}), ratio, same))
						lim, cmp := fs[1], finding(fs, "stream.parallel_comparison")
						roomy := cmp.Severity == "warning"
						bad := (roomy && lim.Code == "stream.link_limited") ||
							(!roomy && (lim.Code == "stream.window_limited" || lim.Code == "stream.per_stream_limited")) ||
							(same && (lim.Code == "stream.link_limited" || strings.Contains(cmp.Detail, "link"))) ||
							(ratio >= 1.05 && strings.Contains(lim.Detail+cmp.Summary, "no more"))
						if bad {
							t.Errorf("stall %v retr %v cpu %v ratio %v same host %v: %s %q beside %q", stall, retr, cpu, ratio, same, lim.Code, lim.Summary, cmp.Summary)
						}
					}
				}
			}
		}
	}
}

// TestRRPacedIsNoCeiling: a run paced with --rate made the round trips it
// was asked to; the ceiling for one session is what its round trip allows
// (issue 12: "1,000 round trips per second is the ceiling" at --rate 1000).
func TestRRPacedIsNoCeiling(t *testing.T) {
	r := &result.RR{Config: result.RRConfig{Queries: 5000, Rate: 1000}, RoundTrips: 2001, Rate: 1000.5,
		Latency: result.Latency{Mean: result.Seconds(135 * time.Microsecond), P50: result.Seconds(52 * time.Microsecond), P99: result.Seconds(200 * time.Microsecond)}}
	d := Advise(&result.Report{RR: r})[0].Detail
	if strings.Contains(d, "1,000 round trips per second is the ceiling") || !strings.Contains(d, "paced at 1,000 round trips per second (--rate)") ||
		!strings.Contains(d, "at most about 7,407 per second") {
		t.Fatalf("paced run: %q", d)
	}
	r.Config.Rate = 0
	if d := Advise(&result.Report{RR: r})[0].Detail; !strings.Contains(d, "1,000 round trips per second is the ceiling") {
		t.Fatalf("back-to-back run: %q", d)
	}
}

// TestDiskCustomPatternsRead: every custom shape gets a finding in a DBA's
// words (issue 12: a custom randwrite+fdatasync run ×4 threads had no
// "What it means"), and one the log floor already reads gets no second.
func TestDiskCustomPatternsRead(t *testing.T) {
	l := result.Latencies{P50: result.Seconds(348 * time.Microsecond), P99: result.Seconds(4830 * time.Microsecond)}
	pat := func(name, rw, sync string, threads int) result.DiskPattern {
		p := result.DiskPattern{Profile: "custom", Name: name, RW: rw, Sync: sync, BlockBytes: 4096, QueueDepth: 1, Threads: threads,
			IOs: 1000, IOPS: 6611, Throughput: 27e6, Latencies: l}
		if sync != "none" {
			p.FlushRate = p.IOPS
		}
		if rw == "mix" {
			p.Read, p.Write = &result.DiskDirection{Latencies: l}, &result.DiskDirection{Latencies: l}
		}
		return p
	}
	cases := []struct {
		p    result.DiskPattern
		want string
	}{
		{pat("randwrite 4 KiB + fdatasync ×4 threads", "randwrite", "fdatasync", 4), "4 committers at once made 6,611 commits/s (27 MB/s), 1,653/s each; a commit waited 348 µs at the median"},
		{pat("randwrite 4 KiB O_DSYNC ×2 threads", "randwrite", "dsync", 2), "2 committers at once"},
		{pat("randread 4 KiB QD1", "randread", "none", 1), "randread 4 KiB QD1: 6,611 IOPS (27 MB/s), 1 in flight; each read p50 348 µs"},
		{pat("read 4 KiB QD1", "read", "none", 1), "each read p50"},
		{pat("randwrite 4 KiB QD1", "randwrite", "none", 1), "each write p50 348 µs"},
		{pat("mix 70/30 4 KiB QD1", "mix", "none", 1), "reads p50 348 µs (p99 4.83 ms), writes p50"},
	}
	for _, c := range cases {
		fs := Advise(&result.Report{Disk: &result.Disk{Direct: true, FileBytes: 64 << 20, Patterns: []result.DiskPattern{c.p}}})
		f := finding(fs, "disk.custom_pattern")
		if f == nil || !strings.Contains(f.Summary, c.want) {
			t.Errorf("%s: findings %s, custom %+v; want %q", c.p.Name, codes(fs), f, c.want)
		}
	}
	one := pat("write 4 KiB + fdatasync", "write", "fdatasync", 1)
	fs := Advise(&result.Report{Disk: &result.Disk{Direct: true, Patterns: []result.DiskPattern{one}}})
	if codes(fs) != "disk.log_commit_floor" {
		t.Fatalf("one committer: %s, want the commit floor alone", codes(fs))
	}
}

// TestDiskCPULimited: patterns a CPU limit held narrows off the CPU
// during are named and concluded from by nothing else; the rest are read
// as ever, and a limit that did not bind is not named.
func TestDiskCPULimited(t *testing.T) {
	l := result.Latencies{Mean: result.Seconds(5463 * time.Microsecond), P50: result.Seconds(209 * time.Microsecond), P99: result.Seconds(95 * time.Millisecond)}
	throttled := result.DiskPattern{Profile: "custom", Name: "randread 4 KiB QD32", RW: "randread", Sync: "none", BlockBytes: 4096, QueueDepth: 32, Threads: 1,
		IOs: 16833, IOPS: 5611, Throughput: 23e6, Latencies: l, CPULimitCores: 0.05, CPUThrottledShare: 0.9}
	log := result.DiskPattern{Profile: "log", Name: "write 8 KiB + fdatasync", RW: "write", Sync: "fdatasync", BlockBytes: 8192, QueueDepth: 1, Threads: 1,
		IOs: 5000, IOPS: 5000, FlushRate: 5000, Latencies: result.Latencies{P50: result.Seconds(180 * time.Microsecond), P99: result.Seconds(400 * time.Microsecond)},
		CPULimitCores: 0.05, CPUThrottledShare: 0.01}
	fs := Advise(&result.Report{Disk: &result.Disk{Direct: true, FileBytes: 64 << 20, Patterns: []result.DiskPattern{throttled, log}}})
	f := finding(fs, "disk.cpu_limited")
	if f == nil || !strings.Contains(f.Summary, "a CPU limit of 0.05 of a core (its cgroup's quota), which held it off the CPU during randread 4 KiB QD32 (90% of the limit") {
		t.Fatalf("findings %s: %+v", codes(fs), f)
	}
	if finding(fs, "disk.custom_pattern") != nil || finding(fs, "disk.log_commit_floor") == nil {
		t.Errorf("findings %s: want the throttled pattern concluded from by nothing, the log read as ever", codes(fs))
	}
	throttled.CPUThrottledShare = 0.01
	if fs := Advise(&result.Report{Disk: &result.Disk{Direct: true, FileBytes: 64 << 20, Patterns: []result.DiskPattern{throttled}}}); finding(fs, "disk.cpu_limited") != nil || finding(fs, "disk.custom_pattern") == nil {
		t.Errorf("a limit that did not bind: %s", codes(fs))
	}
}

// TestStartupIsNotLoss: retransmits confined to the start-up (slow start
// overflowing a queue) with N streams no faster is the link; retransmits
// through the steady state, at a rate a loss-held sender can reach, with
// N streams faster, is loss. The figures are the shapes of the testbed's
// 30 ms, 300 Mbit/s line (startup_linux_test.go).
func TestStartupIsNotLoss(t *testing.T) {
	rtt := result.Seconds(31 * time.Millisecond)
	startup := &result.TCPSummary{RTT: rtt, MSSBytes: 1448, Retransmits: 1596, RetransRatio: 0.011,
		StartupEnd: result.Seconds(time.Second), StartupRetransmits: 1596, SteadyIntervals: 7}
	// reno at 0.1% random loss: about Mathis's 15 Mbit/s, retransmits in every interval.
	random := &result.TCPSummary{RTT: rtt, MSSBytes: 1448, Retransmits: 900, RetransRatio: 0.0011,
		StartupEnd: result.Seconds(4 * time.Second), StartupRetransmits: 500, SteadyIntervals: 4, SteadyLossIntervals: 4, SteadyRetransRatio: 0.001}
	// bbr at 1% random loss: the line's rate all the same.
	paced := &result.TCPSummary{RTT: rtt, MSSBytes: 1448, Retransmits: 19000, RetransRatio: 0.012,
		StartupEnd: result.Seconds(4 * time.Second), StartupRetransmits: 9000, SteadyIntervals: 4, SteadyLossIntervals: 4, SteadyRetransRatio: 0.01}
	// A loss-based sender at the line's rate, one overflow of the queue
	// later in the run (its sawtooth): once is not sustained.
	sawtooth := &result.TCPSummary{RTT: rtt, MSSBytes: 1448, Retransmits: 1700, RetransRatio: 0.012,
		StartupEnd: result.Seconds(time.Second), StartupRetransmits: 1600, SteadyIntervals: 7, SteadyLossIntervals: 1, SteadyRetransRatio: 0.0005}
	// A run saved before the split: judged on its whole ratio, and Mathis.
	unsplit := &result.TCPSummary{RTT: rtt, MSSBytes: 1448, Retransmits: 1596, RetransRatio: 0.011}
	for _, tc := range []struct {
		name       string
		tp         float64
		tcp        *result.TCPSummary
		ratio      float64 // N streams ÷ one; 0: none ran
		want, text string
		cmp        string // in the comparison's summary
	}{
		{"start-up overflow, 4 streams no faster: the link", 279e6, startup, 1.02, "stream.link_limited", "", "carry no more"},
		{"start-up overflow alone: the link", 279e6, startup, 0, "stream.link_limited", "", ""},
		{"random loss, 4 streams faster: loss", 15e6, random, 3.9, "stream.loss_limited", "0.10% of the bytes were sent again after the start-up, with retransmits in 4 of 4 intervals", "room that one stream cannot use"},
		{"random loss alone: loss", 15e6, random, 0, "stream.loss_limited", "after the start-up", ""},
		{"random loss a pacing sender fills the line through: the link", 268e6, paced, 1.04, "stream.link_limited", "", "carry no more"},
		{"random loss a pacing sender fills the line through, alone: the link", 268e6, paced, 0, "stream.link_limited", "", ""},
		{"one later overflow at the line's rate, alone: the link", 279e6, sawtooth, 0, "stream.link_limited", "", ""},
		{"an older run, 1.1% sent again at the line's rate: not loss", 279e6, unsplit, 0, "stream.link_limited", "", ""},
		{"an older run, 3% sent again at a loss-held rate: loss", 1e6, &result.TCPSummary{RTT: rtt, MSSBytes: 1448, Retransmits: 400, RetransRatio: 0.03}, 0, "stream.loss_limited", "3.00% of the bytes were sent again (400 retransmits)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Advise(streamReport(run(tc.tp, 5, 5, tc.tcp), tc.ratio, false))
			if len(fs) < 2 || fs[1].Code != tc.want {
				t.Fatalf("findings %s, want %s second", codes(fs), tc.want)
			}
			if !strings.Contains(fs[1].Summary, tc.text) {
				t.Errorf("summary %q lacks %q", fs[1].Summary, tc.text)
			}
			for _, f := range fs {
				if f.Code == "stream.loss_limited" && tc.want != f.Code {
					t.Errorf("also said %s", f.Code)
				}
			}
			if tc.want == "stream.link_limited" && tc.tcp.Retransmits > 0 && tc.tcp.SteadyIntervals > 0 &&
				!strings.Contains(fs[1].Detail, "start-up") && !strings.Contains(fs[1].Detail, "did not set its rate") {
				t.Errorf("a link verdict with retransmits does not say why they were not loss: %q", fs[1].Detail)
			}
			c := finding(fs, "stream.parallel_comparison")
			switch {
			case tc.ratio == 0 && c != nil:
				t.Errorf("a comparison with no N streams: %+v", c)
			case tc.ratio > 0 && (c == nil || !strings.Contains(c.Summary, tc.cmp)):
				t.Errorf("comparison %+v lacks %q", c, tc.cmp)
			}
		})
	}
}

// TestAdviseEveryPart: the advisor has a case for every kind of part a
// Report can carry.
func TestAdviseEveryPart(t *testing.T) {
	for _, p := range result.Parts() {
		if adviser(p, nil, nil) == nil {
			t.Errorf("the advisor has no case for a %s: add it to adviser", p.Kind())
		}
	}
}

// TestPacketCoreOffloads: the core verdict names the offloads that are
// off at the ends whose core was full, in the role each played (a
// sender's tso and gso, a receiver's gro), and names none that are on;
// an agent's interface name reaches its words escaped.
func TestPacketCoreOffloads(t *testing.T) {
	full := &result.CoreLoad{OS: "linux", Cores: 2, Core: 0, Busy: 1, System: 0.3, SoftIRQ: 0.7}
	nic := func(name string, off ...string) *result.Facts {
		n := result.NIC{Name: name, Offloads: map[string]bool{"tso": true, "gso": true, "gro": true, "lro": false}}
		for _, o := range off {
			n.Offloads[o] = false
		}
		return &result.Facts{OS: "linux", Interfaces: []result.NIC{n}}
	}
	r := withCores(run(7e9, 30, 30, &result.TCPSummary{}), full, full)
	for _, c := range []struct {
		name        string
		here, agent *result.Facts
		want, not   []string
	}{
		{"the sender's segmentation off", nic("va", "tso", "gso"), nic("vb"),
			[]string{"this host (sending) has va: tso, gso off", "turn them on first"}, []string{"the agent (receiving) has"}},
		{"the receiver's gro off, the sender's lro ignored", nic("va", "gro"), nic("vb", "gro"),
			[]string{"the agent (receiving) has vb: gro off"}, []string{"this host (sending) has"}},
		{"all on", nic("va"), nic("vb"), nil, []string{"offloads are off", "turn them on"}},
		{"no facts", nil, nil, nil, []string{"offloads are off"}},
		{"an agent's interface name is escaped", nic("va"), nic("vb\x1b[2J", "gro"), []string{`vb\x1b[2J: gro off`}, []string{"\x1b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The agent's facts are made safe where they are received
			// (the client, a saved run's reader), as here.
			untrusted.Clean(c.agent)
			rep := &result.Report{Stream: &result.Stream{Runs: []result.StreamRun{r}}, Facts: c.here, AgentFacts: c.agent}
			var f *result.Finding
			for _, x := range Advise(rep) {
				if x.Code == "stream.packet_core_limited" {
					f = &x
				}
			}
			if f == nil {
				t.Fatalf("no core verdict: %s", codes(Advise(rep)))
			}
			for _, w := range c.want {
				if !strings.Contains(f.Detail, w) {
					t.Errorf("detail lacks %q: %s", w, f.Detail)
				}
			}
			for _, w := range c.not {
				if strings.Contains(f.Detail, w) {
					t.Errorf("detail has %q: %s", w, f.Detail)
				}
			}
		})
	}
}

// TestPacketCoreInterrupts: the core verdict names the NIC's interrupts
// the full core took, escaped, and what moves them; none when the
// interface has none (a veth).
func TestPacketCoreInterrupts(t *testing.T) {
	full := func(q ...result.CoreIRQ) *result.CoreLoad {
		return &result.CoreLoad{OS: "linux", Cores: 16, Core: 3, Busy: 1, System: 0.2, SoftIRQ: 0.7, IRQ: 0.1, NIC: "eth0", NICInterrupts: q}
	}
	detail := func(l *result.CoreLoad) string {
		// The agent's Done is made safe where it is received (the
		// client, a saved run's reader), as here.
		untrusted.Clean(l)
		for _, f := range Advise(&result.Report{Stream: &result.Stream{Runs: []result.StreamRun{withCores(run(9e9, 40, 60, &result.TCPSummary{}), nil, l)}}}) {
			if f.Code == "stream.packet_core_limited" {
				return f.Detail
			}
		}
		t.Fatal("no core verdict")
		return ""
	}
	d := detail(full(result.CoreIRQ{IRQ: 41, Name: "eth0-TxRx-3", PerSecond: 41234.5}, result.CoreIRQ{IRQ: 42, Name: "q\x1b]0;x\x07", PerSecond: 10}))
	for _, w := range []string{"took the NIC's interrupts: 41,234 a second from eth0's eth0-TxRx-3 (IRQ 41)", `q\x1b]0;x\a (IRQ 42)`, "smp_affinity_list"} {
		if !strings.Contains(d, w) {
			t.Errorf("detail lacks %q: %s", w, d)
		}
	}
	if strings.Contains(d, "\x1b") {
		t.Errorf("an interrupt's name printed raw: %q", d)
	}
	if d := detail(full()); strings.Contains(d, "interrupts:") || strings.Contains(d, "smp_affinity") {
		t.Errorf("interrupts named for an interface with none: %s", d)
	}
}

// TestAskedWindowBeforeCore: a window asked for that held the sender
// most of the run is the limit, even beside a core full of packet work
// (a busy machine's other traffic), unless N windows carried no more;
// stalled less, the full core is named.
func TestAskedWindowBeforeCore(t *testing.T) {
	core := &result.CoreLoad{OS: "linux", Cores: 2, Core: 1, Busy: 0.98, User: 0.3, System: 0.33, SoftIRQ: 0.35}
	for _, c := range []struct {
		name  string
		stall float64
		ratio float64
		want  string
	}{
		{"97% stalled, N windows 1.98×", 0.97, 1.98, "stream.window_limited"},
		{"97% stalled, N windows no more", 0.97, 1.0, "stream.packet_core_limited"},
		{"30% stalled", 0.3, 2.35, "stream.packet_core_limited"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := withCores(run(3e6, 1, 1, &result.TCPSummary{RTT: result.Seconds(30 * time.Microsecond), RwndLimited: c.stall}), core, core)
			s := &result.Stream{Config: result.StreamConfig{WindowBytes: 4 << 10, Streams: 2}, Runs: []result.StreamRun{r},
				Comparison: &result.Comparison{Direction: r.Direction, Streams: 2, Ratio: c.ratio}}
			fs := Advise(&result.Report{Stream: s})
			var got string
			for _, f := range fs {
				if strings.HasSuffix(f.Code, "_limited") {
					got = f.Code
					break
				}
			}
			if got != c.want {
				t.Errorf("limit %s, want %s: %s", got, c.want, codes(fs))
			}
		})
	}
}

// TestPacketCorePlacement: the core verdict says when the full core sits
// on another NUMA node than its NIC, and what kind of interface the NIC
// is when it is not a physical port; nothing on one node or a plain NIC.
func TestPacketCorePlacement(t *testing.T) {
	full := func(numa *result.CoreNUMA) *result.CoreLoad {
		return &result.CoreLoad{OS: "linux", Cores: 32, Core: 20, Busy: 1, System: 0.2, SoftIRQ: 0.7, IRQ: 0.1, NIC: "eth0", NUMA: numa}
	}
	clocked := func(mhz float64) *result.CoreLoad {
		l := full(nil)
		l.MHz = mhz
		return l
	}
	facts := func(driver string) *result.Facts {
		return &result.Facts{Interfaces: []result.NIC{{Name: "eth0", Driver: driver}}}
	}
	for _, c := range []struct {
		name      string
		load      *result.CoreLoad
		agent     *result.Facts
		want, not []string
	}{
		{"another node", full(&result.CoreNUMA{Nodes: 2, CoreNode: 1, NICNode: 0}), facts("ixgbe"),
			[]string{"At the agent, core 20 is on NUMA node 1 and eth0 on node 0 (of 2)", "node 0's cores"}, []string{"paravirtual"}},
		{"the same node", full(&result.CoreNUMA{Nodes: 2, CoreNode: 0, NICNode: 0}), facts("ixgbe"), nil, []string{"NUMA"}},
		{"a NIC that does not say", full(&result.CoreNUMA{Nodes: 2, CoreNode: 1, NICNode: -1}), facts("ixgbe"), nil, []string{"NUMA"}},
		{"virtio", full(nil), facts("virtio_net"), []string{"At the agent, eth0 is a paravirtual NIC (virtio", "steal time"}, []string{"NUMA"}},
		{"vmxnet3", full(nil), facts("vmxnet3"), []string{"eth0 is a paravirtual NIC (VMware's vmxnet3)"}, nil},
		{"a physical NIC, one node", full(nil), facts("mlx5_core"), nil, []string{"NUMA", "At the agent", "cycles"}},
		// 9 Gbit/s for 10 s is 11.25 GB; 10 s of a 2,600 MHz core, 26e9 cycles: 2.3 a byte.
		{"the clock known", clocked(2600), facts("ixgbe"), []string{"2.3 of its cycles a byte received, at 2600 MHz"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := withCores(run(9e9, 40, 60, &result.TCPSummary{}), nil, c.load)
			r.Duration, r.ReceivedBytes = result.Seconds(10*time.Second), 9e9*10/8
			rep := &result.Report{Stream: &result.Stream{Runs: []result.StreamRun{r}}, AgentFacts: c.agent}
			var detail string
			for _, f := range Advise(rep) {
				if f.Code == "stream.packet_core_limited" {
					detail = f.Summary + " " + f.Detail
				}
			}
			if detail == "" {
				t.Fatalf("no core verdict: %s", codes(Advise(rep)))
			}
			for _, w := range c.want {
				if !strings.Contains(detail, w) {
					t.Errorf("detail lacks %q: %s", w, detail)
				}
			}
			for _, w := range c.not {
				if strings.Contains(detail, w) {
					t.Errorf("detail has %q: %s", w, detail)
				}
			}
		})
	}
}
