package cli_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
)

// summaryOf reads the summary record of --json output as the Report it is.
func summaryOf(t *testing.T, out string) *result.Report {
	t.Helper()
	jsonLines(t, out) // every line a record, the summary last
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rep result.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Stream == nil || len(rep.Stream.Runs) == 0 {
		t.Fatalf("no stream runs in %s", lines[len(lines)-1])
	}
	return &rep
}

func findingsText(rep *result.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "%s: %s %s\n", f.Code, f.Summary, f.Detail)
	}
	return b.String()
}

// timestampsHeader is the TCP timestamp option this machine's connections
// carry in each segment (net.ipv4.tcp_timestamps, on by default).
func timestampsHeader(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_timestamps")
	if err != nil || strings.TrimSpace(string(b)) != "0" {
		return 12
	}
	return 0
}

// streamVerdictsAgree fails t when the findings of a real run contradict
// each other or the run's own figures, and returns the limit verdict.
func streamVerdictsAgree(t *testing.T, rep *result.Report) string {
	t.Helper()
	s, one := rep.Stream, rep.Stream.Runs[0]
	text := findingsText(rep)
	var limit, cmp *result.Finding
	for i, f := range rep.Findings {
		switch {
		case f.Code == "stream.parallel_comparison":
			cmp = &rep.Findings[i]
		case strings.HasSuffix(f.Code, "_limited") || f.Code == "stream.limit_unknown":
			if limit == nil {
				limit = &rep.Findings[i]
			}
		}
	}
	if limit == nil {
		t.Fatalf("no limit verdict:\n%s", text)
	}
	if !s.SameHost {
		t.Fatalf("a run on loopback not marked same_host")
	}
	// On one machine there is no link to blame or to have room.
	if limit.Code == "stream.link_limited" || strings.Contains(text, "rate of the link") || strings.Contains(text, "the link has room") {
		t.Errorf("a loopback run judged as a link:\n%s", text)
	}
	tcp := one.TCP
	stall := tcp.RwndLimited + tcp.SndbufLimited
	cpuBound := one.CPU.Available && math.Max(one.CPU.Local, one.CPU.Remote) >= advisor.CPUBound
	asked := s.Config.WindowBytes > 0 // --window
	// A core with no idle time, much of it packets, is named before a
	// window (its packets' ACKs and reads wait on that core, so the
	// sender stalls on the window too): a busy 2-core machine's loopback
	// at 7.5 Gbit/s under --window 64K read a full core and 73% stalls.
	held := false
	if c := one.Cores; c != nil {
		for _, l := range []*result.CoreLoad{c.Local, c.Remote} {
			held = held || advisor.PacketCoreFull(l)
		}
	}
	if limit.Code == "stream.packet_core_limited" && !held {
		t.Errorf("core-limited, yet neither end's busiest core was full of packet work (%+v):\n%s", one.Cores, text)
	}
	throttled := one.CPU.LocalLimitCores > 0 && one.CPU.LocalThrottledShare >= advisor.CPUThrottled
	// But a window asked for that held the sender most of the run, with
	// N windows carrying more, is the limit whatever a core did: a fresh
	// clone's 4 KiB window, 0.00 Gbit/s and 97% stalled, read a core 98%
	// busy, 35% of it the other tests' packets.
	flat := s.Comparison != nil && s.Comparison.Ratio < advisor.Headroom
	windowFirst := asked && !throttled && !cpuBound && stall >= advisor.WindowBound && !flat
	if windowFirst && limit.Code != "stream.window_limited" {
		t.Errorf("the window asked for stalled the sender %.0f%% and N windows carried more, yet %s:\n%s", 100*stall, limit.Code, text)
	}
	if held && asked && !throttled && !windowFirst && limit.Code != "stream.packet_core_limited" {
		t.Errorf("a core full of packet work, yet %s:\n%s", limit.Code, text)
	}
	// Either bound is the host's, not the window's.
	cpuBound = cpuBound || held
	if c := s.Comparison; c != nil {
		if cmp == nil {
			t.Fatalf("a comparison and no finding on it:\n%s", text)
		}
		roomy := c.Ratio >= advisor.Headroom
		if roomy != (cmp.Severity == "warning") {
			t.Errorf("ratio %.2f, comparison %q", c.Ratio, cmp.Summary)
		}
		if c.Ratio >= 1.05 && strings.Contains(text, "no more") {
			t.Errorf("%.2f× called no more:\n%s", c.Ratio, text)
		}
		if !roomy && (limit.Code == "stream.window_limited" || limit.Code == "stream.per_stream_limited") {
			t.Errorf("N streams carried no more (%.2f×), yet the one stream is %s:\n%s", c.Ratio, limit.Code, text)
		}
		if roomy && stall >= advisor.WindowSome && !cpuBound && asked && limit.Code != "stream.window_limited" {
			t.Errorf("window stalls %.0f%% and N windows carried %.2f×, yet %s:\n%s", 100*stall, c.Ratio, limit.Code, text)
		}
	} else if stall >= advisor.WindowSome && !cpuBound && asked && limit.Code != "stream.window_limited" {
		t.Errorf("window stalls %.0f%% with --window asked for, yet %s:\n%s", 100*stall, limit.Code, text)
	}
	// Without --window, on one machine the host is the limit, whether a
	// core or the receiving process (its window) shows it.
	if !asked && limit.Code != "stream.host_limited" {
		t.Errorf("a loopback run with the OS's buffers judged %s, not the host:\n%s", limit.Code, text)
	}
	if !one.CPU.Available && strings.Contains(text, "CPU 0%") {
		t.Errorf("CPU was not measured, yet a finding quotes it:\n%s", text)
	}
	// The headers line: IPv4 and TCP headers with their options, and
	// Ethernet's, per segment of the MSS in use.
	hdr := 14 + 20 + 20 + timestampsHeader(t)
	if one.HeaderBytes != hdr {
		t.Errorf("%d header bytes per segment, want %d (14 Ethernet + 20 IPv4 + 20 TCP + options)", one.HeaderBytes, hdr)
	}
	// No wire was crossed (the agent is on this machine): the report
	// keeps the interface's figure, the words claim none.
	if strings.Contains(text, "bytes of Ethernet/IP/TCP headers") || strings.Contains(text, "loopback interface ≈") {
		t.Errorf("a wire line for a stream that crossed no wire:\n%s", text)
	}
	// The wire figure is the payload received with those headers and what
	// was sent again: nothing else.
	expect := one.Throughput * float64(tcp.MSSBytes+hdr) / float64(tcp.MSSBytes)
	if math.Abs(one.WireThroughput-expect) > 1e-6*expect {
		t.Errorf("wire %.0f bit/s, payload %.0f with %d-byte headers per %d and %.4f%% again gives %.0f",
			one.WireThroughput, one.Throughput, hdr, tcp.MSSBytes, 100*tcp.RetransRatio, expect)
	}
	return limit.Code
}

// TestStreamVerdictsOnLoopback: real runs through an agent on this
// machine, each judged once, whatever a busy or idle machine makes of
// them. A 4 KiB window always stalls (its segments cannot fit, so the
// sender waits on the window nearly all the time): window-limited; a
// 64 KiB window and autotuning stall or not as the machine goes, and the
// verdicts must agree with each other and with the figures either way.
func TestStreamVerdictsOnLoopback(t *testing.T) {
	a := itest.StartAgent(t, nil)
	cases := []struct {
		args []string
		want string // the limit verdict, where the run determines it
	}{
		{[]string{"--window", "4K", "--streams", "2"}, "stream.window_limited"},
		{[]string{"--window", "64K", "--streams", "4"}, ""},
		{[]string{"--streams", "4"}, ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := itest.Run(t, 60*time.Second, nil, append([]string{"net", "stream", "--to", a.Addr, "--duration", "1s", "--json"}, c.args...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			rep := summaryOf(t, r.Stdout)
			got := streamVerdictsAgree(t, rep)
			one := rep.Stream.Runs[0]
			core := "not read"
			if c := one.Cores; c != nil && c.Local != nil && c.Remote != nil {
				core = fmt.Sprintf("%.0f%% (%.0f%% packets)/%.0f%% (%.0f%%)", 100*c.Local.Busy, 100*c.Local.Packet(), 100*c.Remote.Busy, 100*c.Remote.Packet())
			}
			t.Logf("%s: one stream %.2f Gbit/s, stalls %.0f%%+%.0f%%, CPU %.0f%%/%.0f%%, busiest core %s, %.2f× with N: %s",
				strings.Join(c.args, " "), one.Throughput/1e9, 100*one.TCP.RwndLimited, 100*one.TCP.SndbufLimited,
				one.CPU.Local, one.CPU.Remote, core, rep.Stream.Comparison.Ratio, got)
			if c.want != "" && got != c.want {
				t.Errorf("verdict %s, want %s:\n%s", got, c.want, findingsText(rep))
			}
		})
	}
}

// TestStreamAgentDiesMidTest: when the agent dies mid-test, no figure is
// built on what did not arrive: no CPU (the agent's never came), and the
// wire figure is the received payload's, not the sender's counter, which
// ran on past the agent's last report.
func TestStreamAgentDiesMidTest(t *testing.T) {
	a := itest.StartAgent(t, nil)
	out, stderr, code := runAgentKilled(t, a, 2500*time.Millisecond, "net", "stream", "--to", a.Addr, "--duration", "20s", "--interval", "500ms", "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr)
	}
	rep := summaryOf(t, out)
	if !rep.Partial {
		t.Fatal("not marked partial")
	}
	one := rep.Stream.Runs[0]
	if one.CPU.Available || one.ReceivedBytes <= 0 || one.TCP == nil {
		t.Fatalf("cpu %+v, received %d, tcp %v", one.CPU, one.ReceivedBytes, one.TCP)
	}
	if v := streamVerdictsAgree(t, rep); v == "stream.host_limited" && !strings.Contains(findingsText(rep), "CPU not measured") {
		t.Errorf("the verdict does not say CPU was not measured:\n%s", findingsText(rep))
	}
}
