package replication

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

func s(v string) *string { return &v }

// row builds a recorded result row; "NULL" stands for SQL NULL.
func row(kv ...string) map[string]*string {
	m := map[string]*string{}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "NULL" {
			m[strings.ToLower(kv[i])] = nil
		} else {
			m[strings.ToLower(kv[i])] = s(kv[i+1])
		}
	}
	return m
}

func TestStandbyName(t *testing.T) {
	cases := []struct{ conninfo, cluster, want string }{
		{"user=postgres passfile=/x channel_binding=prefer dbname=replication host=10.0.0.1 port=5432 application_name=dr1 fallback_application_name=walreceiver", "main", "dr1"},
		{"user=postgres host=10.0.0.1 port=5432 fallback_application_name=main", "standby1", "standby1"},
		{"", "", "walreceiver"},
	}
	for _, c := range cases {
		if got := standbyName(c.conninfo, c.cluster); got != c.want {
			t.Errorf("standbyName(%q, %q) = %q, want %q", c.conninfo, c.cluster, got, c.want)
		}
	}
}

// The spellings of SHOW REPLICA STATUS: MySQL 8.0.22+/8.4 (Source_*,
// Replica_*) and MariaDB / older MySQL (Master_*, Slave_*), recorded.
func TestMySQLReplicaSpellings(t *testing.T) {
	logs := []binlog{{"binlog.000001", 1000}, {"binlog.000002", 5000}, {"binlog.000003", 0}}
	mysql84 := row("Replica_IO_State", "Waiting for source to send event", "Source_Log_File", "binlog.000002", "Read_Source_Log_Pos", "4000",
		"Relay_Source_Log_File", "binlog.000001", "Exec_Source_Log_Pos", "900", "Replica_IO_Running", "Yes", "Replica_SQL_Running", "Yes",
		"Seconds_Behind_Source", "0", "Last_IO_Error", "", "Last_SQL_Error", "")
	mariadb := row("Slave_IO_State", "", "Master_Log_File", "binlog.000002", "Read_Master_Log_Pos", "4000",
		"Relay_Master_Log_File", "binlog.000001", "Exec_Master_Log_Pos", "900", "Slave_IO_Running", "No", "Slave_SQL_Running", "Yes",
		"Seconds_Behind_Master", "NULL", "Last_IO_Error", "", "Last_SQL_Error", "")
	for name, r := range map[string]map[string]*string{"mysql 8.4": mysql84, "mariadb": mariadb} {
		x := mapMySQLReplica("r1", r, logs, "binlog.000003:0", nil)
		if x.sent == nil || *x.sent != 5000 || x.replay == nil || *x.replay != 900 {
			t.Fatalf("%s: sent %v replay %v, want 5000 and 900", name, x.sent, x.replay)
		}
		if !x.present {
			t.Fatalf("%s: not present", name)
		}
		switch name {
		case "mysql 8.4":
			if x.stopped || x.secondsBehind == nil || *x.secondsBehind != 0 || x.sbmNull {
				t.Fatalf("%s: %+v", name, x)
			}
		case "mariadb":
			if !x.stopped || x.io != "No" || !x.sbmNull || x.secondsBehind != nil || x.engineState != "IO thread No" {
				t.Fatalf("%s: %+v", name, x)
			}
		}
	}
	// A file the source purged cannot be placed.
	x := mapMySQLReplica("r1", row("Master_Log_File", "binlog.000000", "Read_Master_Log_Pos", "4"), logs, "", nil)
	if x.sent != nil {
		t.Fatal("purged file placed")
	}
	// No answer from the replica: a gap, no figures.
	g := &result.Gap{Of: "r1", Reason: "connection refused"}
	x = mapMySQLReplica("r1", nil, logs, "", g)
	if x.present || x.gap != g {
		t.Fatalf("no row: %+v", x)
	}
}

// Recorded SQL Server rows: what sys.dm_hadr_database_replica_states and
// sys.dm_os_performance_counters return on a primary with two secondaries
// (SQL Server 2019). SQL Server cannot run here; this is the mapping.
func TestSQLServerMapping(t *testing.T) {
	for _, q := range []string{"sys.dm_hadr_database_replica_states", "log_send_queue_size", "log_send_rate", "redo_queue_size",
		"redo_rate", "secondary_lag_seconds", "synchronization_state_desc", "is_local = 0"} {
		if !strings.Contains(MSSQLReplicaStates, q) {
			t.Errorf("replica-state query lacks %q", q)
		}
	}
	if !strings.Contains(MSSQLCounters, "'Log Bytes Flushed/sec'") || !strings.Contains(MSSQLCounters, "sys.dm_os_performance_counters") {
		t.Error("counter query")
	}
	if !strings.Contains(MSSQLCheck, "IsHadrEnabled") || !strings.Contains(MSSQLCheck, "role_desc = 'PRIMARY'") {
		t.Error("check query")
	}
	states := []map[string]*string{
		row("replica", "SQL2", "database_name", "Sales", "ag", "AG1", "availability_mode", "SYNCHRONOUS_COMMIT", "sync_state", "SYNCHRONIZED",
			"suspended", "0", "suspend_reason", "NULL", "connected_state", "CONNECTED", "connect_error", "NULL",
			"log_send_queue_kb", "0", "log_send_rate_kb", "5120", "redo_queue_kb", "12", "redo_rate_kb", "4800", "secondary_lag_seconds", "0"),
		row("replica", "SQL3-DR", "database_name", "Sales", "ag", "AG1", "availability_mode", "ASYNCHRONOUS_COMMIT", "sync_state", "SYNCHRONIZING",
			"suspended", "0", "suspend_reason", "NULL", "connected_state", "CONNECTED", "connect_error", "NULL",
			"log_send_queue_kb", "204800", "log_send_rate_kb", "2150", "redo_queue_kb", "1024", "redo_rate_kb", "2000", "secondary_lag_seconds", "42"),
		row("replica", "SQL4", "database_name", "Sales", "ag", "AG1", "availability_mode", "ASYNCHRONOUS_COMMIT", "sync_state", "NOT SYNCHRONIZING",
			"suspended", "1", "suspend_reason", "SUSPEND_FROM_USER", "connected_state", "DISCONNECTED", "connect_error", "An error occurred while receiving data: '10054'",
			"log_send_queue_kb", "NULL", "log_send_rate_kb", "NULL", "redo_queue_kb", "NULL", "redo_rate_kb", "NULL", "secondary_lag_seconds", "NULL"),
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := map[string]CounterSample{}
	counters := func(v string) []map[string]*string {
		return []map[string]*string{
			row("object_name", "SQLServer:Databases", "counter_name", "Log Bytes Flushed/sec", "instance_name", "Sales", "cntr_value", v),
			row("object_name", "SQLServer:Databases", "counter_name", "Log Bytes Flushed/sec", "instance_name", "_Total", "cntr_value", "1"),
		}
	}
	if g := MapMSSQLCounters(counters("1000000000"), prev, t0); g["Sales"] != nil {
		t.Fatal("a rate from one sample")
	}
	gen := MapMSSQLCounters(counters("1007340032"), prev, t0.Add(time.Second)) // 7 MiB in 1 s
	if g := gen["Sales"]; g == nil || *g != 7340032 {
		t.Fatalf("generation %v, want 7340032 B/s", gen["Sales"])
	}
	rs := mapMSSQLStates(states, gen)
	if len(rs) != 3 {
		t.Fatalf("%d replicas", len(rs))
	}
	dr := rs[1]
	if dr.name != "SQL3-DR" || dr.database != "Sales" || *dr.unsent != 204800*1024 || *dr.unreplayed != 1024*1024 ||
		*dr.sendRate != 2150*1024 || *dr.replayRate != 2000*1024 || *dr.secondaryLag != 42*time.Second || *dr.generation != 7340032 {
		t.Fatalf("SQL3-DR mapped to %+v", dr)
	}
	if !rs[2].silent || !rs[2].stopped || rs[2].unsent != nil || !strings.Contains(rs[2].lastErr, "10054") {
		t.Fatalf("disconnected secondary mapped to %+v", rs[2])
	}
	// Through the tracker: RPO and verdict inputs as the advisor sees them.
	tr := &tracker{cfg: Config{SilentAfter: 15 * time.Second}, memos: map[string]*memo{}}
	p := tr.compute(&snapshot{at: t0, replicas: rs}, "sqlserver")
	if p.Replicas[1].Unsent == nil || *p.Replicas[1].Unsent != 204800*1024 || p.Replicas[1].State != result.ReplicaStreaming {
		t.Fatalf("tracked %+v", p.Replicas[1])
	}
	if p.Replicas[2].State != result.ReplicaSilent {
		t.Fatalf("disconnected secondary is %s", p.Replicas[2].State)
	}
}

func i64(v int64) *int64 { return &v }

// A replica the primary stops listing is silent, with the time since its
// last reply, and its figures are not carried over.
func TestTrackerSilence(t *testing.T) {
	tr := &tracker{cfg: Config{SilentAfter: 15 * time.Second}, memos: map[string]*memo{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(at time.Time, cur int64, rs ...raw) *snapshot {
		return &snapshot{at: at, serverNow: at, logBytes: i64(cur), replicas: rs}
	}
	p := tr.compute(mk(t0, 1000, raw{name: "s1", present: true, sent: i64(1000), write: i64(1000), flush: i64(1000), replay: i64(900), replyTime: t0}), "postgres")
	if p.Replicas[0].State != result.ReplicaStreaming || *p.Replicas[0].Unreplayed != 100 || p.Replicas[0].ReplayRate != nil {
		t.Fatalf("first poll %+v", p.Replicas[0])
	}
	p = tr.compute(mk(t0.Add(time.Second), 3000, raw{name: "s1", present: true, sent: i64(2500), write: i64(2400), flush: i64(2000), replay: i64(1900), replyTime: t0.Add(time.Second)}), "postgres")
	r := p.Replicas[0]
	if *p.GenerationRate != 2000 || *r.SendRate != 1500 || *r.ReplayRate != 1000 || *r.Unsent != 500 || *r.Unwritten != 100 || *r.Unflushed != 400 || *r.Unreplayed != 100 {
		t.Fatalf("second poll %+v gen %v", r, *p.GenerationRate)
	}
	p = tr.compute(mk(t0.Add(4*time.Second), 5000), "postgres")
	r = p.Replicas[0]
	if r.State != result.ReplicaSilent || r.SilentFor == nil || r.SilentFor.D() != 3*time.Second || r.SendRate != nil || r.Unsent != nil {
		t.Fatalf("vanished replica %+v", r)
	}
	// Reply too old while still listed: silent too.
	tr2 := &tracker{cfg: Config{SilentAfter: 15 * time.Second}, memos: map[string]*memo{}}
	p = tr2.compute(mk(t0, 1000, raw{name: "s2", present: true, sent: i64(1000), replyTime: t0.Add(-20 * time.Second), standbyNow: t0}), "postgres")
	if p.Replicas[0].State != result.ReplicaSilent {
		t.Fatalf("stale reply: %+v", p.Replicas[0])
	}
}

// The age of a standby's last reply is taken on one clock. reply_time is
// stamped by the standby's clock; before, narrows subtracted it from the
// primary's now(), so a standby whose clock is 15 s behind read as 15 s
// silent while it replied every second (and one ahead, or a reply newer
// than the poll's transaction, gave a negative age: "-1819000 ns"). Here
// the standby replies every second, 300 ms before each poll, its clock
// off by ±15 s; narrows' clock and the primary's agree.
func TestReplyAgeOneClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, skew := range []time.Duration{-15 * time.Second, 15 * time.Second, 0} {
		for _, ownClock := range []bool{false, true} {
			tr := &tracker{cfg: Config{SilentAfter: 15 * time.Second}, memos: map[string]*memo{}}
			var lastSent time.Time
			for i := range 40 {
				now := t0.Add(time.Duration(i) * time.Second)
				replying := i < 20
				if replying {
					lastSent = now.Add(-300 * time.Millisecond)
				}
				x := raw{name: "s1", present: true, sent: i64(1000), replyTime: lastSent.Add(skew)}
				if ownClock {
					x.standbyNow = now.Add(skew)
				}
				p := tr.compute(&snapshot{at: now, serverNow: now, logBytes: i64(1000), replicas: []raw{x}}, "postgres")
				st := p.Replicas[0]
				truth := now.Sub(lastSent)
				switch {
				case i == 0 && !ownClock:
					// One stamp tells nothing without a second clock reading.
					if st.LastReply != nil || st.State != result.ReplicaStreaming {
						t.Fatalf("skew %v: first poll %+v", skew, st)
					}
				case st.LastReply == nil:
					t.Fatalf("skew %v own %v poll %d: no reply age", skew, ownClock, i)
				default:
					// Never more than the truth, never more than one
					// interval less.
					if a := st.LastReply.D(); a > truth || a < truth-time.Second {
						t.Fatalf("skew %v own %v poll %d: reply age %v, truly %v", skew, ownClock, i, a, truth)
					}
				}
				silent := truth > 15*time.Second+time.Second
				if replying && st.State != result.ReplicaStreaming || silent && st.State != result.ReplicaSilent {
					t.Fatalf("skew %v own %v poll %d: %s after %v without a reply", skew, ownClock, i, st.State, truth)
				}
			}
		}
	}
}

// A standby that stops streaming stays one row: its slot, no longer in
// use, is the standby narrows saw streaming from it (not a second replica
// "not heard from since narrows started"), and a failover to it would
// lose the log past what its slot says it flushed.
func TestSlotStaysWithItsStandby(t *testing.T) {
	tr := &tracker{cfg: Config{SilentAfter: 15 * time.Second}, memos: map[string]*memo{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ws := raw{name: "walreceiver", app: "walreceiver", present: true, slot: "dr_slot", sent: i64(5000), write: i64(5000), flush: i64(4000), replay: i64(4000),
		held: i64(4000), replyTime: t0, standbyNow: t0}
	tr.compute(&snapshot{at: t0, logBytes: i64(5000), replicas: []raw{ws}}, "postgres")
	slot := raw{name: "dr_slot", slot: "dr_slot", slotOnly: true, slotRetained: i64(6000), held: i64(4000), engineState: "replication slot not in use"}
	p := tr.compute(&snapshot{at: t0.Add(4 * time.Second), logBytes: i64(10000), replicas: []raw{slot}}, "postgres")
	if len(p.Replicas) != 1 {
		t.Fatalf("%d rows for one standby: %+v", len(p.Replicas), p.Replicas)
	}
	st := p.Replicas[0]
	if st.Name != "walreceiver" || st.State != result.ReplicaSilent || st.NeverHeard || st.SilentFor.D() != 4*time.Second ||
		st.Unconfirmed == nil || *st.Unconfirmed != 6000 || *st.SlotRetained != 6000 || st.Unsent != nil {
		t.Fatalf("the stopped standby: %+v", st)
	}
}

// Standbys that share an application_name (the default "walreceiver") are
// told apart by where they connect from; a standby named with
// --replica-dsn takes the walsender that streams from its slot.
func TestPostgresRowNames(t *testing.T) {
	rs := []raw{
		{app: "walreceiver", clientAddr: "10.0.0.2", clientPort: "40001", slot: "dr1"},
		{app: "walreceiver", clientAddr: "10.0.0.3", clientPort: "40002", slot: "dr2"},
		{app: "walreceiver", clientAddr: "10.0.0.3", clientPort: "40003"},
		{app: "standby1", clientAddr: "10.0.0.4", clientPort: "40004"},
	}
	// Without slots, by address, and by port where even that is shared.
	same := []raw{{app: "walreceiver", clientAddr: "10.0.0.5", clientPort: "1"}, {app: "walreceiver", clientAddr: "10.0.0.5", clientPort: "2"}, {app: "walreceiver", clientAddr: "local"}}
	rowNames(same)
	if same[0].name != "walreceiver@10.0.0.5:1" || same[1].name != "walreceiver@10.0.0.5:2" || same[2].name != "walreceiver@local" {
		t.Errorf("named %q %q %q", same[0].name, same[1].name, same[2].name)
	}
	rowNames(rs)
	want := []string{"walreceiver/dr1", "walreceiver/dr2", "walreceiver@10.0.0.3", "standby1"}
	for i, w := range want {
		if rs[i].name != w {
			t.Errorf("row %d named %q, want %q", i, rs[i].name, w)
		}
	}
	if i := claim(rs, &replicaConn{Replica: Replica{Name: "dr"}, known: "walreceiver", slot: "dr2"}); i != 1 {
		t.Errorf("by slot: claimed row %d", i)
	}
	if i := claim(rs, &replicaConn{Replica: Replica{Name: "x"}, known: "walreceiver", addrs: []string{"10.0.0.3"}}); i != 2 {
		t.Errorf("by name and address: claimed row %d", i)
	}
	if i := claim(rs, &replicaConn{Replica: Replica{Name: "y"}, known: "standby9", slot: "gone"}); i != -1 {
		t.Errorf("a standby the primary does not list: claimed row %d", i)
	}
}

// The privilege a user lacks, named as the server's version knows it, and
// the account quoted as GRANT needs it.
func TestMySQLPrivilege(t *testing.T) {
	cases := []struct {
		version string
		replica bool
		want    string
	}{
		{"10.11.19-MariaDB-0+deb12u1", true, "REPLICA MONITOR"},
		{"10.11.19-MariaDB-0+deb12u1", false, "BINLOG MONITOR"},
		{"10.5.9-MariaDB", true, "REPLICA MONITOR"},
		{"10.5.8-MariaDB", true, "REPLICATION SLAVE ADMIN"},
		{"10.5.8-MariaDB", false, "BINLOG MONITOR"},
		{"10.4.32-MariaDB", true, "REPLICATION CLIENT"},
		{"11.4.2-MariaDB-log", true, "REPLICA MONITOR"},
		{"8.0.36", true, "REPLICATION CLIENT"},
		{"8.4.0", false, "REPLICATION CLIENT"},
		{"5.7.44-log", true, "REPLICATION CLIENT"},
	}
	for _, c := range cases {
		if got := privilege(c.version, c.replica); got != c.want {
			t.Errorf("privilege(%q, replica %v) = %q, want %q", c.version, c.replica, got, c.want)
		}
	}
	if got := account("nar'rows@10.0.%"); got != "'nar''rows'@'10.0.%'" {
		t.Errorf("account: %s", got)
	}
}

// TestReceiverOnDisk counts the polls in a row a standby's walreceiver
// waited on its own disk, and keeps only a wait event's own words.
func TestReceiverOnDisk(t *testing.T) {
	tr := &tracker{cfg: Config{SilentAfter: 15 * time.Second}, memos: map[string]*memo{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []int
	for i, w := range []string{"IO/WALInitSync", "IO/WALWrite", "Activity/WalReceiverMain", "IO/WALSync", "", "IO/WALSync"} {
		at := t0.Add(time.Duration(i) * time.Second)
		p := tr.compute(&snapshot{at: at, serverNow: at, logBytes: i64(1000), replicas: []raw{{name: "s1", present: true, sent: i64(1000), replyTime: at, receiverWait: w}}}, "postgres")
		if p.Replicas[0].ReceiverWait != w {
			t.Errorf("poll %d: wait %q, want %q", i, p.Replicas[0].ReceiverWait, w)
		}
		got = append(got, p.Replicas[0].ReceiverOnDisk)
	}
	if want := []int{1, 2, 0, 1, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("polls on disk in a row %v, want %v", got, want)
	}
	for in, want := range map[string]string{"IO/WALSync": "IO/WALSync", "/": "", "IO/WAL\x1b[2J": "", "IO/" + strings.Repeat("x", 70): "", "": ""} {
		if got := waitEvent(in); got != want {
			t.Errorf("waitEvent(%q) = %q, want %q", in, got, want)
		}
	}
}

// A standby back from an outage asks for its WAL segment from the start:
// at its first poll back the walsender has sent less than the standby
// already holds (its replies not yet in). The log it lacks, and so the
// RPO, counts from what it was known to hold, not from the segment's
// start (a 12 s outage at 2 MB/s read 38.4 MiB unsent, 20 s of log).
func TestReconnectSendsFromTheSegment(t *testing.T) {
	tr := &tracker{cfg: Config{SilentAfter: 15 * time.Second}, memos: map[string]*memo{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(at time.Time, cur int64, rs ...raw) *snapshot {
		return &snapshot{at: at, serverNow: at, logBytes: i64(cur), replicas: rs}
	}
	tr.compute(mk(t0, 20_000, raw{name: "s1", present: true, sent: i64(20_000), write: i64(20_000), flush: i64(20_000), replay: i64(20_000), held: i64(20_000), replyTime: t0}), "postgres")
	tr.compute(mk(t0.Add(5*time.Second), 30_000), "postgres") // gone
	p := tr.compute(mk(t0.Add(12*time.Second), 44_000, raw{name: "s1", present: true, sent: i64(16_384), replyTime: t0.Add(12 * time.Second)}), "postgres")
	if u := p.Replicas[0].Unsent; u == nil || *u != 24_000 {
		t.Fatalf("unsent at the first poll back: %v, want 24000 (the log past the 20000 it held, not past the segment's start at 16384)", u)
	}
	p = tr.compute(mk(t0.Add(13*time.Second), 46_000, raw{name: "s1", present: true, sent: i64(40_000), write: i64(40_000), flush: i64(38_000), held: i64(38_000), replyTime: t0.Add(13 * time.Second)}), "postgres")
	if u := p.Replicas[0].Unsent; u == nil || *u != 6_000 {
		t.Fatalf("unsent once it streams again: %v, want 6000", u)
	}
}

// The unsent log's age is when the primary wrote its first byte, by
// narrows' own polls of the primary's position: the time a failover would
// lose, whatever the rate does. Here the primary writes 2000 B/s for 10 s,
// then 200 B/s while a standby that stopped confirming at 4 s is away;
// at 14 s, back, its walsender has sent nothing new.
func TestUnsentAge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := &tracker{cfg: Config{SilentAfter: 15 * time.Second}, memos: map[string]*memo{}}
	pos := int64(0)
	var last result.ReplicaState
	for i := 0; i <= 14; i++ {
		if i > 0 {
			pos += map[bool]int64{true: 2000, false: 200}[i <= 10]
		}
		sent := min(pos, 8000) // the standby got the log up to 4 s (8000 B)
		p := tr.compute(&snapshot{at: t0.Add(time.Duration(i) * time.Second), logBytes: i64(pos),
			replicas: []raw{{name: "s1", present: true, sent: i64(sent), replyTime: t0.Add(time.Duration(i) * time.Second)}}}, "postgres")
		last = p.Replicas[0]
		if i <= 4 && last.UnsentAge != nil {
			t.Fatalf("at %d s nothing is unsent, yet an age %v", i, last.UnsentAge.D())
		}
	}
	// The first unsent byte, 8000, was written at 4 s: 10 s ago. Its bytes
	// over the last poll's rate (200 B/s) would read 64 s.
	if last.UnsentAge == nil || last.UnsentAge.D() != 10*time.Second || *last.Unsent != 20800-8000 {
		t.Fatalf("at 14 s: unsent %v, age %v; want 12800 B written from 4 s on, 10 s", *last.Unsent, last.UnsentAge)
	}
	// Between two polls, interpolated: byte 9000 was written half-way
	// between 4 s (8000) and 5 s (10000).
	if age, ok := tr.unsentAge(9000, t0.Add(14*time.Second)); !ok || age != 9500*time.Millisecond {
		t.Fatalf("byte 9000 written %v ago (%v), want 9.5 s", age, ok)
	}
	// Older than the polls kept, or not yet written: no age.
	tr.written = tr.written[5:] // the oldest now 5 s, at 10000
	if _, ok := tr.unsentAge(9000, t0.Add(14*time.Second)); ok {
		t.Fatal("an age for log written before the oldest poll kept")
	}
	if _, ok := tr.unsentAge(20800, t0.Add(14*time.Second)); ok {
		t.Fatal("an age for log not yet written")
	}
	// A position behind the last (a new primary) starts afresh; the record
	// never holds more than writtenKeep polls.
	tr.wrote(t0.Add(15*time.Second), i64(100))
	if len(tr.written) != 1 {
		t.Fatalf("after the position went back, %d polls kept", len(tr.written))
	}
	for i := range writtenKeep + 10 {
		tr.wrote(t0.Add(time.Duration(16+i)*time.Second), i64(int64(200+i)))
	}
	if len(tr.written) != writtenKeep || tr.written[0].pos != 200+10 {
		t.Fatalf("%d polls kept, the oldest at %d", len(tr.written), tr.written[0].pos)
	}
}
