package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

func i64(v int64) *int64                  { return &v }
func f64(v float64) *float64              { return &v }
func sec(d time.Duration) *result.Seconds { s := result.Seconds(d); return &s }

func TestReplVerdicts(t *testing.T) {
	const MB = 1e6
	cases := []struct {
		name     string
		gen      *float64
		st       result.ReplicaState
		code     string
		contains string
		check    func(t *testing.T, st result.ReplicaState)
	}{
		{"keeping up", f64(20 * MB), result.ReplicaState{State: "streaming", Unsent: i64(0), Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(4096),
			SendRate: f64(20 * MB), WriteRate: f64(20 * MB), FlushRate: f64(20 * MB), ReplayRate: f64(20 * MB)}, result.VerdictKeepingUp, "keeping up",
			func(t *testing.T, st result.ReplicaState) {
				if st.RPOSeconds == nil || *st.RPOSeconds != 0 || *st.RPOBytes != 0 || st.CatchUp == nil {
					t.Fatalf("RPO %v catch-up %v", st.RPOSeconds, st.CatchUp)
				}
			}},
		{"send queue growing", f64(20 * MB), result.ReplicaState{State: "streaming", Unsent: i64(40_000_000), Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(0),
			SendRate: f64(12 * MB), WriteRate: f64(12 * MB), FlushRate: f64(12 * MB), ReplayRate: f64(12 * MB)}, result.VerdictSendQueue,
			"send queue growing at 8 MB/s because generation 20 MB/s > send 12 MB/s",
			func(t *testing.T, st result.ReplicaState) {
				if st.RPOSeconds == nil || st.RPOSeconds.D() != 2*time.Second || st.CatchUp != nil {
					t.Fatalf("RPO %v (want 2 s = 40 MB / 20 MB/s), catch-up %v (want none)", st.RPOSeconds, st.CatchUp)
				}
			}},
		{"replay paused", f64(5 * MB), result.ReplicaState{State: "streaming", Unsent: i64(0), Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(30_000_000),
			SendRate: f64(5 * MB), WriteRate: f64(5 * MB), FlushRate: f64(5 * MB), ReplayRate: f64(0), ReplayPaused: new(true)}, result.VerdictReplay,
			"replay is the bottleneck", func(t *testing.T, st result.ReplicaState) {
				if !strings.Contains(st.Verdict, "paused") || st.RedoTime != nil {
					t.Fatalf("%q redo %v", st.Verdict, st.RedoTime)
				}
			}},
		{"standby disk", f64(20 * MB), result.ReplicaState{State: "streaming", Unsent: i64(0), Unwritten: i64(10_000_000), Unflushed: i64(20_000_000), Unreplayed: i64(0),
			SendRate: f64(20 * MB), WriteRate: f64(20 * MB), FlushRate: f64(9 * MB), ReplayRate: f64(9 * MB), UnflushedGrowing: DiskPolls}, result.VerdictDisk, "disk is the bottleneck", nil},
		// PostgreSQL's walreceiver writes between its reads: a slow disk
		// grows the send queue, and the walreceiver's wait tells.
		{"standby disk behind the walreceiver", f64(4 * MB), result.ReplicaState{State: "streaming", Unsent: i64(20_000_000), Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(0),
			SendRate: f64(1 * MB), WriteRate: f64(1 * MB), FlushRate: f64(1 * MB), ReplayRate: f64(1 * MB), ReceiverWait: "IO/WALInitSync", ReceiverOnDisk: ReceiverDiskPolls},
			result.VerdictDisk, "walreceiver was waiting on its own disk (IO/WALInitSync) at the last 3 polls", nil},
		{"two polls of the walreceiver on its disk: a sample of an instant", f64(4 * MB), result.ReplicaState{State: "streaming", Unsent: i64(20_000_000), Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(0),
			SendRate: f64(1 * MB), WriteRate: f64(1 * MB), FlushRate: f64(1 * MB), ReplayRate: f64(1 * MB), ReceiverWait: "IO/WALWrite", ReceiverOnDisk: ReceiverDiskPolls - 1},
			result.VerdictSendQueue, "send queue growing", nil},
		{"send queue, the walreceiver on the network", f64(4 * MB), result.ReplicaState{State: "streaming", Unsent: i64(20_000_000), Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(0),
			SendRate: f64(1 * MB), WriteRate: f64(1 * MB), FlushRate: f64(1 * MB), ReplayRate: f64(1 * MB), ReceiverWait: "Activity/WalReceiverMain"},
			result.VerdictSendQueue, "waits on the network (Activity/WalReceiverMain), not on its disk", nil},
		// One poll of it is a burst (a standby catching up after an
		// outage receives faster than it flushes): not yet its disk.
		{"one poll of a flush behind", f64(20 * MB), result.ReplicaState{State: "streaming", Unsent: i64(0), Unwritten: i64(10_000_000), Unflushed: i64(20_000_000), Unreplayed: i64(0),
			SendRate: f64(20 * MB), WriteRate: f64(20 * MB), FlushRate: f64(9 * MB), ReplayRate: f64(9 * MB), UnflushedGrowing: 1}, result.VerdictCatchingUp, "behind by", nil},
		{"catching up", f64(5 * MB), result.ReplicaState{State: "streaming", Unsent: i64(0), Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(100_000_000),
			SendRate: f64(5 * MB), WriteRate: f64(5 * MB), FlushRate: f64(5 * MB), ReplayRate: f64(25 * MB)}, result.VerdictCatchingUp, "caught up in about 5.00 s",
			func(t *testing.T, st result.ReplicaState) {
				if st.RedoTime == nil || st.RedoTime.D() != 4*time.Second {
					t.Fatalf("redo %v, want 4 s", st.RedoTime)
				}
			}},
		{"silent, not zero lag", f64(5 * MB), result.ReplicaState{State: "silent", SilentFor: sec(12 * time.Second), EngineState: "not connected to the primary"},
			result.VerdictSilent, "replica silent for 12 s", nil},
		{"a replication connection not streaming yet", f64(5 * MB), result.ReplicaState{State: "streaming", EngineState: "startup"},
			result.VerdictUnknown, "starting up, not streaming", nil},
		{"no positions, no word for why", f64(5 * MB), result.ReplicaState{State: "streaming", EngineState: "catchup"},
			result.VerdictUnknown, "no position figures for this replica in this poll", func(t *testing.T, st result.ReplicaState) {
				if strings.Contains(st.Verdict, "starting") {
					t.Fatalf("%q says starting up of a walsender in catchup", st.Verdict)
				}
			}},
		{"mysql io thread stopped, SBM NULL", f64(2 * MB), result.ReplicaState{State: "stopped", Unsent: i64(3_000_000), Unreplayed: i64(0),
			SendRate: f64(0), ReplayRate: f64(0), IOThread: "No", SQLThread: "Yes", SecondsBehindNull: true}, result.VerdictSendQueue, "IO thread is not running", nil},
		// The unsent log's age (narrows' polls of the primary's position)
		// is the time lost, whatever the rate did since: 18.5 MB written
		// over 13 s, not 18.5 s at the last poll's 1 MB/s.
		{"send queue, the unsent log's age known", f64(1 * MB), result.ReplicaState{State: "streaming", Unsent: i64(18_500_000), UnsentAge: sec(13 * time.Second),
			Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(0), SendRate: f64(0.5 * MB), WriteRate: f64(0.5 * MB), FlushRate: f64(0.5 * MB), ReplayRate: f64(0.5 * MB)},
			result.VerdictSendQueue, "send queue growing", func(t *testing.T, st result.ReplicaState) {
				if st.RPOSeconds == nil || st.RPOSeconds.D() != 13*time.Second {
					t.Fatalf("RPO %v, want the unsent log's age, 13 s", st.RPOSeconds)
				}
			}},
		{"sql server per-database generation", nil, result.ReplicaState{State: "streaming", Generation: f64(7 * MB), Unsent: i64(14_000_000), Unreplayed: i64(0),
			SendRate: f64(2 * MB), ReplayRate: f64(2 * MB)}, result.VerdictSendQueue, "generation 7 MB/s > send 2 MB/s",
			func(t *testing.T, st result.ReplicaState) {
				if st.RPOSeconds == nil || st.RPOSeconds.D() != 2*time.Second {
					t.Fatalf("RPO %v", st.RPOSeconds)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &result.ReplPoll{GenerationRate: c.gen, Replicas: []result.ReplicaState{c.st}}
			ReplPoll(p)
			st := p.Replicas[0]
			if st.VerdictCode != c.code || !strings.Contains(st.Verdict, c.contains) {
				t.Fatalf("verdict %s %q, want %s containing %q", st.VerdictCode, st.Verdict, c.code, c.contains)
			}
			if c.check != nil {
				c.check(t, st)
			}
		})
	}
}

// The finding says the RPO in time as what it is: the log the primary
// wrote in the last so many seconds where narrows saw it written, its
// bytes at the current rate where it did not.
func TestReplRPOWords(t *testing.T) {
	for _, c := range []struct {
		age  *result.Seconds
		want string
	}{
		{sec(13 * time.Second), "A failover now would lose 17.6 MiB of log: what the primary wrote in the last 13.0 s."},
		{nil, "A failover now would lose 17.6 MiB of log, 18.5 s of generation at the current rate"},
	} {
		r := &result.Repl{Engine: "postgres", Last: &result.ReplPoll{GenerationRate: f64(1e6), Replicas: []result.ReplicaState{{Name: "dr1", State: "streaming",
			Unsent: i64(18_500_000), UnsentAge: c.age, Unwritten: i64(0), Unflushed: i64(0), Unreplayed: i64(0),
			SendRate: f64(0.5e6), WriteRate: f64(0.5e6), FlushRate: f64(0.5e6), ReplayRate: f64(0.5e6)}}}}
		var said []string
		for _, f := range repl(r) {
			said = append(said, f.Detail)
		}
		if !strings.Contains(strings.Join(said, "\n"), c.want) {
			t.Errorf("age %v: findings say\n%s\nwant %q", c.age, strings.Join(said, "\n"), c.want)
		}
	}
}

func TestDBPingFindings(t *testing.T) {
	ms := func(f float64) result.Seconds { return result.Seconds(f * float64(time.Millisecond)) }
	r := &result.DBPing{Engine: "postgres", Queries: 25000, Rate: 2500, Duration: result.Seconds(10 * time.Second),
		Config:  result.DBPingConfig{Queries: 5000},
		Latency: result.Latency{Mean: ms(0.4), P50: ms(0.38), P99: ms(0.9)},
		Connect: result.Connect{TCP: ms(0.3), Login: ms(3), Total: ms(3.3)},
		Network: &result.NetworkSplit{Method: "bounds", TCPConnectSamples: 5, NetworkLow: ms(0.3), NetworkHigh: ms(0.33),
			NetworkShareLow: 0.79, NetworkShareHigh: 0.87, LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query"}}
	fs := dbping(r)
	if len(fs) < 3 || fs[0].Summary != "A report that issues 5,000 queries spends 2.00 s on round trips (400 µs each on average, 2,500 queries/s in one session)." {
		t.Fatalf("findings %+v", fs)
	}
	if !strings.Contains(fs[1].Summary, "network takes between 300 µs and 330 µs (79–87%)") || !strings.Contains(fs[1].Detail, "the network dominates") {
		t.Fatalf("split finding %+v", fs[1])
	}
}

// TestNetworkShareVerdicts: without an agent the verdict is the bounds':
// one side dominates only when the bound that favours the other side
// says so; the "the server will not help" advice never rests on bounds
// that straddle a line. With an agent its figure decides.
func TestNetworkShareVerdicts(t *testing.T) {
	us := func(f float64) result.Seconds { return result.Seconds(f * float64(time.Microsecond)) }
	p := func(v result.Seconds) *result.Seconds { return &v }
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name          string
		p50           result.Seconds
		n             result.NetworkSplit
		verdict, rest string
		bounds        string
		has, hasNot   []string
	}{
		{"loopback, no agent", us(45), result.NetworkSplit{Method: "bounds", NetworkLow: us(10), NetworkHigh: us(30), LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query"},
			"cannot_tell", "", "cannot_tell", []string{"cannot tell which dominates", "At most 67%: the network does not dominate", "--to HOST"}, []string{"the server will not"}},
		{"a WAN", us(10100), result.NetworkSplit{Method: "bounds", NetworkLow: us(10000), NetworkHigh: us(10050), LowFrom: "tcp_handshake_rtt", HighFrom: "com_ping"},
			"network_dominates", "", "network_dominates", []string{"Even the least the network can take", "the server will not"}, nil},
		{"a heavy query", us(5000), result.NetworkSplit{Method: "bounds", NetworkLow: us(200), NetworkHigh: us(250), LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query"},
			"server_dominates", "", "server_dominates", []string{"Even the most the network can take", "a faster network will not help"}, []string{"the server will not"}},
		{"shared", us(400), result.NetworkSplit{Method: "bounds", NetworkLow: us(150), NetworkHigh: us(250), LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query"},
			"shared", "", "shared", []string{"share the time"}, []string{"the server will not"}},
		{"no cheaper round trip, no probes", us(400), result.NetworkSplit{Method: "bounds", NetworkLow: 0, NetworkHigh: us(350), LowFrom: "none", HighFrom: "fastest_query"},
			"cannot_tell", "", "cannot_tell", []string{"--tcp-probes 0", "the fastest query"}, []string{"the server will not"}},
		{"agent", us(45), result.NetworkSplit{Method: "agent_rr", NetworkLow: us(10), NetworkHigh: us(30), LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query",
			Agent: "db1:7447", AgentRTTP50: us(22), AgentRTTs: 90000, NetworkP50: p(us(22)), ServerP50: p(us(23)), NetworkShare: f(22.0 / 45), ServerShare: f(23.0 / 45)},
			"shared", "", "cannot_tell", []string{"net rr through the agent at db1:7447", "Without the agent narrows reads the network between 10.0 µs–30.0 µs (22–67%)"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.n
			n.NetworkShareLow, n.NetworkShareHigh = float64(n.NetworkLow)/float64(c.p50), float64(n.NetworkHigh)/float64(c.p50)
			r := &result.DBPing{Engine: "postgres", Queries: 1000, Latency: result.Latency{P50: c.p50}, Network: &n}
			got := networkShare(r, &n)
			if n.Verdict != c.verdict || n.BoundsVerdict != c.bounds {
				t.Fatalf("verdict %s, bounds %s; want %s, %s: %+v", n.Verdict, n.BoundsVerdict, c.verdict, c.bounds, got)
			}
			text := got.Summary + " " + got.Detail
			for _, s := range c.has {
				if !strings.Contains(text, s) {
					t.Errorf("%q lacks %q", text, s)
				}
			}
			for _, s := range c.hasNot {
				if strings.Contains(text, s) {
					t.Errorf("%q holds %q", text, s)
				}
			}
		})
	}
}

// TestDBLoadCommitLatency: the commit latency finding turns p50 into one
// session's ceiling on commits a second, and is left out when nothing was
// timed.
func TestDBLoadCommitLatency(t *testing.T) {
	ms := func(f float64) result.Seconds { return result.Seconds(f * float64(time.Millisecond)) }
	r := &result.DBLoad{Config: result.DBLoadConfig{Rate: 40e3}, Rate: 40e3, LogBytes: 160e3, Duration: result.Seconds(4 * time.Second),
		Rows: 145, Table: "narrows_load", Dropped: true, Commits: 145, CommitLatency: &result.Latencies{P50: ms(12.5), P99: ms(14)}}
	var got *result.Finding
	for _, f := range dbload(r) {
		if f.Code == "load.commit_latency" {
			got = &f
		}
	}
	if got == nil || got.Values["commits_per_second_one_session"] != 80 || got.Values["commit_latency_p50_seconds"] != 0.0125 ||
		!strings.Contains(got.Summary, "12.5 ms at p50 (p99 14.0 ms) over 145 commits") || !strings.Contains(got.Summary, "at most 80 times a second") {
		t.Fatalf("commit latency finding %+v", got)
	}
	r.Commits, r.CommitLatency = 0, nil
	for _, f := range dbload(r) {
		if f.Code == "load.commit_latency" {
			t.Fatalf("a finding without commits: %+v", f)
		}
	}
}
