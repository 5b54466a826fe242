package invariants

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/result"
)

var start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func streamReport(tp float64) *result.Report {
	rep := result.NewReport("net stream", "db2:7447", result.Tool{}, start)
	rep.Stream = &result.Stream{Throughput: tp, Runs: []result.StreamRun{{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: tp,
		TCP: &result.TCPSummary{MSSBytes: 1448, RTT: result.Seconds(10 * time.Millisecond)}}}}
	return rep
}

func iv(start, end time.Duration, tp float64) result.Interval {
	i := result.NewInterval("stream", start, end)
	i.Direction, i.Throughput = "forward", tp
	return i
}

// ivTCP is iv with the sender's window at its end.
func ivTCP(start, end time.Duration, tp float64, cwnd int64) result.Interval {
	i := iv(start, end, tp)
	i.TCP = &result.TCPInterval{CwndBytes: cwnd}
	return i
}

func finding(code, summary string, values map[string]float64) result.Finding {
	return result.Finding{Code: code, Severity: "info", Summary: summary, Values: values}
}

func rules(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Rule)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Each case breaks one rule (want it) or sits just inside it (want none).
func TestCheck(t *testing.T) {
	const line = 300e6
	cases := []struct {
		name string
		rep  func() *result.Report
		ivs  []result.Interval
		path Path
		want string // the rule broken; "" none
	}{
		{"intervals within the line", func() *result.Report { return streamReport(0.99 * line) },
			[]result.Interval{iv(0, time.Second, line), iv(time.Second, 2*time.Second, 1.04*line)}, Path{line}, ""},
		{"a closing fragment faster than the line", func() *result.Report { return streamReport(0.99 * line) },
			[]result.Interval{iv(0, 5*time.Second, line), iv(5*time.Second, 5*time.Second+500*time.Microsecond, 8.7*line)}, Path{line}, RuleRate},
		// 1% loss with BBR at 30 ms: bytes held behind a hole are read in
		// the next second, up to what was in flight when it began.
		{"a second reads what waited behind a loss", func() *result.Report { return streamReport(0.99 * line) },
			[]result.Interval{ivTCP(0, time.Second, 0.98*line, 2<<20), ivTCP(time.Second, 2*time.Second, 1.057*line, 2<<20)}, Path{line}, ""},
		{"more than was in flight", func() *result.Report { return streamReport(0.99 * line) },
			[]result.Interval{ivTCP(0, time.Second, 0.98*line, 256<<10), ivTCP(time.Second, 2*time.Second, 1.07*line, 2<<20)}, Path{line}, RuleRate},
		{"a fragment is held to the line alone", func() *result.Report { return streamReport(0.99 * line) },
			[]result.Interval{ivTCP(0, time.Second, 0.98*line, 2<<20), ivTCP(time.Second, 1100*time.Millisecond, 1.2*line, 2<<20)}, Path{line}, RuleRate},
		{"a summary faster than the line", func() *result.Report { return streamReport(1.06 * line) }, nil, Path{line}, RuleRate},
		{"the wire rate faster than the line", func() *result.Report {
			r := streamReport(0.98 * line)
			r.Stream.Runs[0].WireThroughput = 1.06 * line
			return r
		}, nil, Path{line}, RuleRate},
		{"the NIC's speed when no path is given", func() *result.Report {
			r := streamReport(1.2e9)
			r.Facts = &result.Facts{Interfaces: []result.NIC{{Name: "eth0", SpeedMbps: 1000}}}
			return r
		}, nil, Path{}, RuleRate},
		{"a virtual interface's speed is no limit", func() *result.Report {
			r := streamReport(14e9)
			r.Facts = &result.Facts{Interfaces: []result.NIC{{Name: "veth0", Driver: "veth", SpeedMbps: 10000}}}
			return r
		}, nil, Path{}, ""},
		{"no rate known: no rate check", func() *result.Report { return streamReport(40e9) }, nil, Path{}, ""},
		{"the same host: no link to hold it to", func() *result.Report {
			r := streamReport(40e9)
			r.Stream.SameHost = true
			r.Facts = &result.Facts{Interfaces: []result.NIC{{Name: "eth0", SpeedMbps: 1000}}}
			return r
		}, nil, Path{}, ""},
		{"link- and loss-limited together", func() *result.Report {
			r := streamReport(line)
			r.Findings = []result.Finding{finding("stream.link_limited", "Link-limited.", nil), finding("stream.loss_limited", "Loss-limited.", nil)}
			return r
		}, nil, Path{}, RuleContradiction},
		{"two directions may have two limits", func() *result.Report {
			r := streamReport(line)
			r.Stream.Runs = append(r.Stream.Runs, result.StreamRun{Phase: result.PhaseSingle, Direction: "reverse", Throughput: line})
			r.Findings = []result.Finding{finding("stream.link_limited", "Link-limited (forward).", nil), finding("stream.loss_limited", "Loss-limited (reverse).", nil)}
			return r
		}, nil, Path{}, ""},
		{"under load ok and bufferbloat", func() *result.Report {
			r := result.NewReport("net rr", "x", result.Tool{}, start)
			r.Loaded = &result.Loaded{Idle: result.LoadedPhase{RoundTrips: 10}, Loaded: result.LoadedPhase{RoundTrips: 10}}
			r.Findings = []result.Finding{finding("rr.under_load_ok", "A", nil), finding("rr.bufferbloat", "B", nil)}
			return r
		}, nil, Path{}, RuleContradiction},
		{"one replica keeps up and falls behind", func() *result.Report {
			r := result.NewReport("plan replica", "x", result.Tool{}, start)
			r.Findings = []result.Finding{finding("plan.replica_keeps_up", "Database a keeps up: …", map[string]float64{"log_peak_bytes_per_second": 1}),
				finding("plan.replica_falls_behind", "Database a falls behind: …", nil)}
			return r
		}, nil, Path{}, RuleContradiction},
		{"two databases, two verdicts", func() *result.Report {
			r := result.NewReport("plan replica", "x", result.Tool{}, start)
			r.Findings = []result.Finding{finding("plan.replica_keeps_up", "Database a keeps up: …", map[string]float64{"log_peak_bytes_per_second": 1}),
				finding("plan.replica_falls_behind", "Database b falls behind: …", nil)}
			return r
		}, nil, Path{}, ""},
		{"two replicas, two states", func() *result.Report {
			r := result.NewReport("db repl", "x", result.Tool{}, start)
			r.Findings = []result.Finding{finding("repl.keeping_up", "dr1: keeping up.", nil), finding("repl.silent", "dr2: replica silent.", nil)}
			return r
		}, nil, Path{}, ""},
		{"one replica, two states", func() *result.Report {
			r := result.NewReport("db repl", "x", result.Tool{}, start)
			r.Findings = []result.Finding{finding("repl.keeping_up", "dr1: keeping up.", nil), finding("repl.silent", "dr1: replica silent.", nil)}
			return r
		}, nil, Path{}, RuleContradiction},
		{"mtu ok and a black hole", func() *result.Report {
			r := result.NewReport("net mtu", "x", result.Tool{}, start)
			r.Findings = []result.Finding{finding("mtu.ok", "ok", nil), finding("mtu.black_hole", "hole", nil)}
			return r
		}, nil, Path{}, RuleContradiction},
		{"the same words twice", func() *result.Report {
			r := streamReport(line)
			r.Findings = []result.Finding{finding("stream.link_limited", "Link-limited: the stream filled the path.", nil),
				finding("stream.single_stream_capacity", "Link-limited: the stream filled the path.", nil)}
			return r
		}, nil, Path{}, RuleSameWords},
		{"a sysctl that lowers the maximum", func() *result.Report {
			r := result.NewReport("plan replica", "x", result.Tool{}, start)
			r.ReplicaPlan = &result.ReplicaPlan{Window: result.ReplicaWindow{ReceiverRmemMax: 32 << 20, Tuning: []result.Tuning{{Host: "the replica's host", OS: "linux",
				Setting: "net.ipv4.tcp_rmem", Current: "4096 131072 33554432", CurrentMax: 32 << 20, Needed: 512 << 10, Status: result.TuningRaise,
				Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`}}}}
			return r
		}, nil, Path{}, RuleTuning},
		{"a sysctl where the setting is enough", func() *result.Report {
			r := result.NewReport("plan replica", "x", result.Tool{}, start)
			r.ReplicaPlan = &result.ReplicaPlan{Window: result.ReplicaWindow{ReceiverRmemMax: 32 << 20, Tuning: []result.Tuning{{Host: "the replica's host", OS: "linux",
				Setting: "net.ipv4.tcp_rmem", Current: "4096 131072 33554432", CurrentMax: 32 << 20, Needed: 512 << 10, Status: result.TuningEnough,
				Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 33554432"`}}}}
			return r
		}, nil, Path{}, RuleTuning},
		{"a sysctl that lowers the default", func() *result.Report {
			r := result.NewReport("plan replica", "x", result.Tool{}, start)
			r.ReplicaPlan = &result.ReplicaPlan{Window: result.ReplicaWindow{ReceiverRmemMax: 1 << 20, Tuning: []result.Tuning{{Host: "the replica's host", OS: "linux",
				Setting: "net.ipv4.tcp_rmem", Current: "4096 1048576 1048576", CurrentMax: 1 << 20, Needed: 2 << 20, Status: result.TuningRaise,
				Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`}}}}
			return r
		}, nil, Path{}, RuleTuning},
		{"a sysctl that raises it", func() *result.Report {
			r := result.NewReport("plan replica", "x", result.Tool{}, start)
			r.ReplicaPlan = &result.ReplicaPlan{Window: result.ReplicaWindow{ReceiverRmemMax: 128 << 10, Tuning: []result.Tuning{{Host: "the replica's host", OS: "linux",
				Setting: "net.ipv4.tcp_rmem", Current: "4096 131072 131072", CurrentMax: 128 << 10, Needed: 512 << 10, Status: result.TuningRaise,
				Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`}}}}
			return r
		}, nil, Path{}, ""},
		{"a finding's command below this host's", func() *result.Report {
			r := streamReport(line)
			r.Facts = &result.Facts{TCP: &result.TCPSettings{RmemMax: 32 << 20}}
			r.Findings = []result.Finding{{Code: "stream.window_limited", Summary: "w", Detail: `run sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`}}
			return r
		}, nil, Path{}, RuleTuning},
		{"a Windows level below the current one", func() *result.Report {
			r := streamReport(line)
			r.Facts = &result.Facts{TCP: &result.TCPSettings{AutoTuning: "normal"}}
			r.Findings = []result.Finding{{Code: "stream.window_limited", Summary: "w", Detail: "netsh interface tcp set global autotuninglevel=disabled"}}
			return r
		}, nil, Path{}, RuleTuning},
		{"a zero start", func() *result.Report {
			r := streamReport(line)
			r.StartedAt = time.Time{}
			return r
		}, nil, Path{}, RuleStartedAt},
		{"an interval before the start", func() *result.Report { return streamReport(line) },
			[]result.Interval{iv(-time.Second, 0, line)}, Path{}, RuleStartedAt},
		{"a NaN deep in a plan", func() *result.Report {
			r := streamReport(line)
			r.Findings = []result.Finding{finding("stream.link_limited", "Link-limited.", map[string]float64{"x_ratio": math.NaN()})}
			return r
		}, nil, Path{}, RuleNotFinite},
		{"an infinity in an interval", func() *result.Report { return streamReport(line) },
			[]result.Interval{iv(0, time.Second, math.Inf(1))}, Path{}, RuleNotFinite},
		{"an unknown code", func() *result.Report {
			r := streamReport(line)
			r.Findings = []result.Finding{finding("stream.fast", "Fast.", nil)}
			return r
		}, nil, Path{}, RuleUnknownCode},
		{"keeps up from an idle primary", func() *result.Report {
			r := result.NewReport("plan replica", "x", result.Tool{}, start)
			r.Findings = []result.Finding{finding("plan.replica_keeps_up", "The replica keeps up: …", map[string]float64{"log_peak_bytes_per_second": 0})}
			return r
		}, nil, Path{}, RuleNoData},
		{"a doctor's two stream steps, two limits", func() *result.Report {
			fwd, rev := streamReport(line), streamReport(line)
			fwd.Findings = []result.Finding{finding("stream.window_limited", "Partly window-limited.", nil)}
			rev.Findings = []result.Finding{finding("stream.host_limited", "No network was crossed.", nil)}
			r := result.NewReport("doctor", "x", result.Tool{}, start)
			r.Doctor = &result.Doctor{Steps: []result.DoctorStep{{Name: "net stream", Report: fwd}, {Name: "net stream reverse", Report: rev}},
				Verdicts: append(slices.Clone(fwd.Findings), rev.Findings...)}
			r.Findings = r.Doctor.Verdicts
			return r
		}, nil, Path{}, ""},
		{"a doctor's step is checked with its intervals", func() *result.Report {
			r := result.NewReport("doctor", "x", result.Tool{}, start)
			r.Doctor = &result.Doctor{Steps: []result.DoctorStep{{Name: "net stream", Report: streamReport(line),
				Intervals: []result.Interval{iv(0, time.Millisecond, 3*line)}}}}
			return r
		}, nil, Path{line}, RuleRate},
	}
	cases = append(cases, struct {
		name string
		rep  func() *result.Report
		ivs  []result.Interval
		path Path
		want string
	}{"a doctor's step breaks a rule: said once", func() *result.Report {
		step := result.NewReport("plan replica", "x", result.Tool{}, start)
		step.Findings = []result.Finding{finding("plan.replica_keeps_up", "The replica keeps up: …", map[string]float64{"log_peak_bytes_per_second": 0})}
		r := result.NewReport("doctor", "x", result.Tool{}, start)
		r.Doctor = &result.Doctor{Steps: []result.DoctorStep{{Name: "plan replica", Report: step}}, Verdicts: step.Findings}
		r.Findings = r.Doctor.Verdicts
		return r
	}, nil, Path{}, RuleNoData})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := Check(c.rep(), c.ivs, c.path)
			if strings.HasSuffix(c.name, "said once") && len(vs) != 1 {
				t.Errorf("said %d times: %v", len(vs), vs)
			}
			got := strings.Join(rules(vs), ",")
			if got != c.want {
				t.Fatalf("broke %q, want %q: %v", got, c.want, vs)
			}
			for _, v := range vs {
				if strings.ContainsAny(v.Line, "\n\x1b") || v.Line == "" {
					t.Errorf("violation line not one safe line: %q", v.Line)
				}
			}
		})
	}
}

// A hostile summary is printed escaped: a violation is one line.
func TestViolationLineIsSafe(t *testing.T) {
	r := streamReport(1)
	r.Findings = []result.Finding{finding("x\x1b[2J\nnarrows: fine", "s", nil)}
	vs := Check(r, nil, Path{})
	if len(vs) != 1 || strings.ContainsAny(vs[0].Line, "\x1b\n") {
		t.Fatalf("got %q", vs)
	}
}

// Every pair names codes the advisor can emit: a pair of typos holds
// nothing.
func TestContradictionsNameKnownCodes(t *testing.T) {
	for _, p := range Contradictions() {
		for _, c := range p {
			if !advisor.KnownCode(c) {
				t.Errorf("pair %v: %q is not in advisor.Codes", p, c)
			}
		}
	}
}

// TestAgree: two measures of one quantity in one report agree, or the
// report says they disagree. Each case sits just inside (want none) or
// breaks it (want RuleDisagree).
func TestAgree(t *testing.T) {
	us := func(v float64) result.Seconds { return result.Seconds(time.Duration(v * float64(time.Microsecond))) }
	disk := func(iops, meanUS float64, qd int) func() *result.Report {
		return func() *result.Report {
			r := result.NewReport("disk", "/pg", result.Tool{}, start)
			p := result.DiskPattern{Name: "randread 4 KiB QD32", QueueDepth: qd, Threads: 1, IOs: int64(iops * 3), IOPS: iops}
			p.Mean = us(meanUS)
			r.Disk = &result.Disk{Patterns: []result.DiskPattern{p}}
			return r
		}
	}
	stream := func(sent, received int64) func() *result.Report {
		return func() *result.Report {
			r := streamReport(1e8)
			r.Stream.Runs[0].SentBytes, r.Stream.Runs[0].ReceivedBytes = sent, received
			return r
		}
	}
	ping := func(network, high float64, above bool) func() *result.Report {
		return func() *result.Report {
			r := result.NewReport("db ping", "db2", result.Tool{}, start)
			n, h := us(network), us(high)
			r.DBPing = &result.DBPing{Network: &result.NetworkSplit{NetworkHigh: h, NetworkP50: &n, AgentAboveHigh: above}}
			return r
		}
	}
	sync := func(flush, check float64, said bool) func() *result.Report {
		return func() *result.Report {
			r := result.NewReport("plan sync", "db2", result.Tool{}, start)
			r.SyncPlan = &result.SyncPlan{Parts: result.SyncParts{RemoteFlush: &result.Figure{Seconds: us(flush), Source: "measured on the agent"},
				RemoteFlushCheck: &result.Figure{Seconds: us(check), Source: "measured on the agent"}}}
			if said {
				r.Findings = []result.Finding{finding("plan.sync_flush_disagree", "cannot judge the replica's storage", nil)}
			}
			return r
		}
	}
	for _, c := range []struct {
		name string
		rep  func() *result.Report
		want string
	}{
		{"disk: 116,653 IOPS at 192 µs is 22.4 in flight of 32", disk(116653, 192, 32), ""},
		{"disk: a CPU limit's waits in the latency, 30.6 in flight of 32", disk(5611, 5463, 32), ""},
		{"disk: 40 in flight of 32", disk(100000, 400, 32), RuleDisagree},
		{"disk: a log flush, one at a time, 0.9 in flight", disk(4500, 200, 1), ""},
		{"disk: a log flush, one at a time, 2 in flight", disk(4500, 450, 1), RuleDisagree},
		{"stream: all sent received", stream(1<<30, 1<<30), ""},
		{"stream: more received than sent", stream(1<<30, 1<<30+1), RuleDisagree},
		{"db ping: the agent within the high bound", ping(900, 1000, false), ""},
		{"db ping: the agent above it, taken at it and said", ping(1000, 1000, true), ""},
		{"db ping: the split above the high bound", ping(1200, 1000, false), RuleDisagree},
		{"db ping: said above, but not taken at it", ping(1200, 1000, true), RuleDisagree},
		{"plan sync: two flushes that agree", sync(160, 200, false), ""},
		{"plan sync: 456 against 162 µs, said", sync(162, 456, true), ""},
		{"plan sync: 456 against 162 µs, not said", sync(162, 456, false), RuleDisagree},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, v := range Check(c.rep(), nil, Path{}) {
				if v.Rule == RuleDisagree {
					got = append(got, v.Rule)
				}
				if strings.ContainsAny(v.Line, "\n\x1b") {
					t.Errorf("violation line not one safe line: %q", v.Line)
				}
			}
			if strings.Join(slices.Compact(got), ",") != c.want {
				t.Fatalf("broke %v, want %q", got, c.want)
			}
		})
	}
}
