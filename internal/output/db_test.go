package output_test

import (
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/result"
)

func i64(v int64) *int64                 { return &v }
func f64(v float64) *float64             { return &v }
func sp(d time.Duration) *result.Seconds { s := result.Seconds(d); return &s }

// tally sums up advised db repl records as the command line does.
func tally(ivs ...result.Interval) *result.ReplRun {
	var t advisor.ReplTally
	for _, iv := range ivs {
		t.Add(iv)
	}
	return t.Run()
}

// dbFixtures: a ping with a lost connection, a PostgreSQL standby whose
// replay is paused, a MariaDB replica whose IO thread is stopped, a SQL
// Server secondary, a poll during which the primary was gone, and a load.
func dbFixtures() (map[string][]result.Interval, map[string]*result.Report) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tool := result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}
	lat := result.Latency{Min: ms(0.2), Mean: ms(0.41), P50: ms(0.39), P90: ms(0.45), P99: ms(0.8), P999: ms(1.9), Max: ms(4.2)}

	ping := result.NewReport("db ping", "postgres://narrows:xxxxx@db1:5432/postgres", tool, at)
	iv := result.NewInterval(result.ProbeDBPing, 0, time.Second)
	iv.Queries, iv.QueryRate, iv.RTT = 2450, 2450, &lat
	end := result.Seconds(2500 * time.Millisecond)
	gap := result.Gap{Of: "session", Start: result.Seconds(time.Second), End: &end, Reason: "read tcp: connection reset by peer", Retries: 2}
	giv := result.NewInterval(result.ProbeDBPing, time.Second, 2500*time.Millisecond)
	giv.Gap = &gap
	ping.DBPing = &result.DBPing{Config: result.DBPingConfig{Query: "SELECT 1", Duration: result.Seconds(3 * time.Second), Interval: result.Seconds(time.Second), Queries: 5000},
		Engine: "postgres", ServerVersion: "16.4", Connect: result.Connect{Setup: ms(0.1), FailedAttempts: []result.ConnectAttempt{{Outcome: "tls_refused", TCP: ms(0.11), Took: ms(8.0)}},
			TCP: ms(0.108), Login: ms(12.892), Total: ms(21.1)},
		Queries: 4900, Duration: result.Seconds(2 * time.Second), Rate: 2450, Latency: lat,
		Network: &result.NetworkSplit{Method: "bounds", TCPConnectSamples: 5, TCPConnectP50: ms(0.36), TCPConnectMin: ms(0.31),
			HandshakeRTTP50: ms(0.3), EmptyRoundTrips: 2000, EmptyRTTP50: ms(0.33), NetworkLow: ms(0.3), NetworkHigh: ms(0.33),
			LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query", NetworkShareLow: 0.769, NetworkShareHigh: 0.846, QueryRTTP50: ms(0.39)},
		KernelRTT: ms(0.35), KernelMinRTT: ms(0.29), Gaps: []result.Gap{gap}}
	ping.Findings = advisor.Advise(ping)

	pg := &result.ReplPoll{At: at, Engine: "postgres", LogPosition: "0/5A000000", LogBytes: i64(0x5A000000), GenerationRate: f64(5e6), PollTime: ms(1.2),
		Replicas: []result.ReplicaState{
			{Name: "standby1", State: "streaming", EngineState: "streaming", SyncState: "async", Unsent: i64(0), Unwritten: i64(0), Unflushed: i64(8192),
				Unreplayed: i64(31_457_280), SendRate: f64(5e6), WriteRate: f64(5e6), FlushRate: f64(5e6), ReplayRate: f64(0),
				WriteLag: sp(400 * time.Microsecond), FlushLag: sp(900 * time.Microsecond), ReplayLag: sp(6 * time.Second), LastReply: sp(300 * time.Millisecond), ReplayPaused: new(true)},
			{Name: "dr1", State: "silent", EngineState: "not connected to the primary", SilentFor: sp(42 * time.Second), LastReply: sp(42 * time.Second),
				Silence: "no walsender on the primary", Slot: "dr1_slot", SlotRetained: i64(26_214_400), Unconfirmed: i64(26_214_400),
				Gap: &result.Gap{Of: "dr1", Reason: "connect to 10.0.0.7:5432: connection refused", Retries: 12}},
		}}
	repl := result.NewReport("db repl", "postgres://narrows:xxxxx@db1:5432/postgres", tool, at)
	piv := result.NewInterval(result.ProbeRepl, 0, time.Second)
	piv.Repl = pg
	advisor.ReplPoll(pg)
	gend := result.NewInterval(result.ProbeRepl, time.Second, 2*time.Second)
	gend.Repl = &result.ReplPoll{At: at.Add(time.Second), Engine: "postgres", Replicas: []result.ReplicaState{}, Gap: &result.Gap{Of: "primary", Start: result.Seconds(time.Second), Reason: "dial tcp 10.0.0.5:5432: connect: connection refused"}}
	repl.Repl = &result.Repl{Config: result.ReplConfig{Interval: result.Seconds(time.Second), Replicas: []string{"standby1"}, SilentAfter: result.Seconds(15 * time.Second)},
		Engine: "postgres", Polls: 2, Last: pg, QueriesPerPoll: 2, Duration: result.Seconds(2 * time.Second),
		Gaps: []result.Gap{*gend.Repl.Gap}, Run: tally(piv, gend)}
	repl.Findings = advisor.Advise(repl)

	my := &result.ReplPoll{At: at, Engine: "mysql", LogPosition: "binlog.000003:8812", LogBytes: i64(40_000_000), GenerationRate: f64(2e6),
		Replicas: []result.ReplicaState{{Name: "replica1", State: "stopped", EngineState: "", Unsent: i64(4_970_000), Unreplayed: i64(0), SendRate: f64(0), ReplayRate: f64(0),
			SecondsBehindNull: true, IOThread: "No", SQLThread: "Yes"}}}
	myRep := result.NewReport("db repl", "mysql://narrows:xxxxx@db3:3306/", tool, at)
	miv := result.NewInterval(result.ProbeRepl, 0, time.Second)
	miv.Repl = my
	advisor.ReplPoll(my)
	myRep.Repl = &result.Repl{Config: result.ReplConfig{Interval: result.Seconds(time.Second), Replicas: []string{"replica1"}, SilentAfter: result.Seconds(15 * time.Second)},
		Engine: "mysql", Polls: 1, Last: my, QueriesPerPoll: 2, Duration: result.Seconds(time.Second), Gaps: []result.Gap{}, Run: tally(miv)}
	myRep.Findings = advisor.Advise(myRep)

	ms := &result.ReplPoll{At: at, Engine: "sqlserver", Replicas: []result.ReplicaState{{Name: "SQL3-DR", Database: "Sales", State: "streaming",
		EngineState: "SYNCHRONIZING", SyncState: "asynchronous_commit", Generation: f64(7340032), Unsent: i64(209_715_200), Unreplayed: i64(1_048_576),
		SendRate: f64(2_201_600), ReplayRate: f64(2_048_000), SecondaryLag: sp(42 * time.Second)}}}
	msRep := result.NewReport("db repl", "sqlserver://narrows:xxxxx@sql1:1433", tool, at)
	siv := result.NewInterval(result.ProbeRepl, 0, time.Second)
	siv.Repl = ms
	advisor.ReplPoll(ms)
	msRep.Repl = &result.Repl{Config: result.ReplConfig{Interval: result.Seconds(time.Second), Replicas: []string{}, SilentAfter: result.Seconds(15 * time.Second)},
		Engine: "sqlserver", Polls: 1, Last: ms, QueriesPerPoll: 2, Duration: result.Seconds(time.Second), Gaps: []result.Gap{}, Run: tally(siv)}
	msRep.Findings = advisor.Advise(msRep)

	load := result.NewReport("db load", "postgres://narrows:xxxxx@db1:5432/postgres", tool, at)
	liv := result.NewInterval(result.ProbeDBLoad, 0, time.Second)
	cp50, cp99 := result.Seconds(1100*time.Microsecond), result.Seconds(2700*time.Microsecond)
	liv.Load = &result.LoadInterval{LogBytes: 20_000_000, Rate: 2e7, Rows: 19_000, Commits: 95, CommitP50: &cp50, CommitP99: &cp99}
	commitLat := func(p50, p99 time.Duration) *result.Latencies {
		return &result.Latencies{Min: result.Seconds(800 * time.Microsecond), Mean: result.Seconds(1200 * time.Microsecond), P50: result.Seconds(p50),
			P90: result.Seconds(1500 * time.Microsecond), P99: result.Seconds(p99), P999: result.Seconds(3 * time.Millisecond), Max: result.Seconds(3300 * time.Microsecond)}
	}
	load.DBLoad = &result.DBLoad{Config: result.DBLoadConfig{Rate: 2e7, Duration: result.Seconds(time.Second), Interval: result.Seconds(time.Second), RowBytes: 1000, Sessions: 2},
		Engine: "postgres", Table: "narrows_load", Rows: 19_000, LogBytes: 20_000_000, PayloadBytes: 19_000_000, Duration: result.Seconds(time.Second),
		Rate: 2e7, Measure: "wal_lsn", Dropped: true, Gaps: []result.Gap{}, Commits: 95, RowsPerCommit: 200, CommitPayloadBytes: 200_000,
		CommitLatency: commitLat(1100*time.Microsecond, 2700*time.Microsecond),
		Sessions: []result.LoadSession{{Session: 1, Rows: 9600, PayloadBytes: 9_600_000, PayloadRate: 9.6e6, Commits: 48, CommitLatency: commitLat(1050*time.Microsecond, 2600*time.Microsecond)},
			{Session: 2, Rows: 9400, PayloadBytes: 9_400_000, PayloadRate: 9.4e6, Commits: 47, CommitLatency: commitLat(1150*time.Microsecond, 2700*time.Microsecond)}}}
	load.Findings = advisor.Advise(load)

	return map[string][]result.Interval{"db_ping": {iv, giv}, "db_repl_pg": {piv, gend}, "db_repl_mysql": {miv}, "db_repl_sqlserver": {siv}, "db_load": {liv}},
		map[string]*result.Report{"db_ping": ping, "db_repl_pg": repl, "db_repl_mysql": myRep, "db_repl_sqlserver": msRep, "db_load": load}
}
