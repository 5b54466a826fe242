package replication

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
)

// PostgreSQL queries. Every one is a SELECT; pg_monitor (or superuser) is
// needed for the standbys' positions in pg_stat_replication.
const (
	pgCheck = `SELECT pg_is_in_recovery()::text AS recovery, current_user AS usr,
  (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)::text AS super,
  pg_has_role(current_user, 'pg_monitor', 'MEMBER')::text AS monitor`
	// Each walsender with the slot it streams from (a physical slot's
	// active_pid is its walsender). reply_time is the standby's clock: it
	// is never subtracted from the primary's now() here.
	pgReplication = `SELECT r.application_name, host(r.client_addr) AS client_addr, r.client_port::text AS client_port,
  r.state, r.sync_state, s.slot_name AS slot,
  r.sent_lsn::text AS sent, r.write_lsn::text AS write, r.flush_lsn::text AS flush, r.replay_lsn::text AS replay,
  extract(epoch FROM r.write_lag)::float8 AS write_lag, extract(epoch FROM r.flush_lag)::float8 AS flush_lag,
  extract(epoch FROM r.replay_lag)::float8 AS replay_lag, extract(epoch FROM r.reply_time)::float8 AS reply_time
FROM pg_stat_replication r LEFT JOIN pg_replication_slots s ON s.active_pid = r.pid
WHERE r.state IS DISTINCT FROM 'backup' ORDER BY r.application_name, r.pid`
	// Read after the standbys, so the WAL position is never behind them.
	// Every physical slot: name=restart_lsn=active=inactive_since (PostgreSQL
	// 17 tells since when a slot is unused; to_jsonb reads it where it is).
	// clock_timestamp() is the primary's clock now, not at the start of a
	// transaction, to measure a standby's clock against.
	pgPrimary = `SELECT pg_current_wal_lsn()::text AS lsn, extract(epoch FROM clock_timestamp())::float8 AS now,
  (SELECT string_agg(slot_name || '=' || coalesce(restart_lsn::text, '') || '=' || active::text || '=' ||
     coalesce(extract(epoch FROM (to_jsonb(s) ->> 'inactive_since')::timestamptz)::text, ''), ',')
   FROM pg_replication_slots s WHERE slot_type = 'physical') AS slots`
	pgStandbyCheck = `SELECT pg_is_in_recovery()::text AS recovery, current_setting('cluster_name') AS cluster,
  (SELECT conninfo FROM pg_stat_wal_receiver) AS conninfo,
  coalesce((SELECT slot_name FROM pg_stat_wal_receiver), current_setting('primary_slot_name', true)) AS slot`
	// receiver_wait is what the walreceiver waits on at this instant: the
	// network (Activity/WalReceiverMain) or its own disk (IO/WALWrite,
	// IO/WALSync, IO/WALInitSync, a new segment zero-filled and synced).
	// It reads the network only between its writes and flushes.
	pgStandby = `SELECT pg_last_wal_receive_lsn()::text AS receive, pg_last_wal_replay_lsn()::text AS replay,
  pg_is_wal_replay_paused()::text AS paused, (SELECT status FROM pg_stat_wal_receiver) AS status,
  (SELECT coalesce(wait_event_type, '') || '/' || coalesce(wait_event, '') FROM pg_stat_activity
   WHERE backend_type = 'walreceiver' LIMIT 1) AS receiver_wait,
  coalesce((SELECT slot_name FROM pg_stat_wal_receiver), current_setting('primary_slot_name', true)) AS slot,
  extract(epoch FROM clock_timestamp())::float8 AS now`
)

type pgWatcher struct{}

func (*pgWatcher) queriesPerPoll(int) int { return 2 }

func lsnPtr(v *string) *int64 {
	if v == nil {
		return nil
	}
	n, err := dbconn.ParseLSN(*v)
	if err != nil {
		return nil
	}
	return &n
}

func floatPtr(v *string) *float64 {
	if v == nil {
		return nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(*v), 64)
	if err != nil || math.IsNaN(f) {
		return nil
	}
	return &f
}

func durPtr(v *string) *time.Duration {
	f := floatPtr(v)
	if f == nil {
		return nil
	}
	d := time.Duration(*f * float64(time.Second))
	return &d
}

func epoch(f float64) time.Time {
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

func (*pgWatcher) check(ctx context.Context, c *sql.Conn) error {
	rows, err := dbconn.QueryMaps(ctx, c, pgCheck)
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return fmt.Errorf("unexpected answer to the role check")
	}
	r := rows[0]
	user := str(r, "usr")
	if str(r, "recovery") == "true" {
		return dbconn.NotPrimaryf("this server is a standby (pg_is_in_recovery() is true), not a primary: point --dsn at the primary and name standbys with --replica-dsn")
	}
	if str(r, "super") != "true" && str(r, "monitor") != "true" {
		return dbconn.Permissionf("user %q is not a member of pg_monitor, so pg_stat_replication hides the standbys' positions: GRANT pg_monitor TO %s", user, quoteIdent(user))
	}
	return nil
}

// waitEvent keeps a wait event the server named as type/event, in the
// words PostgreSQL uses (letters, digits, _), and nothing else: it is
// the server's text, printed.
func waitEvent(v string) string {
	if len(v) > 64 || v == "/" {
		return ""
	}
	for _, r := range v {
		if !(r == '/' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return ""
		}
	}
	return v
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (*pgWatcher) checkReplica(ctx context.Context, rc *replicaConn) error {
	rows, err := dbconn.QueryMaps(ctx, rc.conn.Conn, pgStandbyCheck)
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return fmt.Errorf("unexpected answer to the standby check")
	}
	r := rows[0]
	if str(r, "recovery") != "true" {
		return dbconn.NotPrimaryf("this server is not a standby (pg_is_in_recovery() is false): --replica-dsn must name a standby of the primary")
	}
	// The user's name is what is shown; the primary's names (its
	// application_name, its slot) are what match it there.
	rc.known = standbyName(str(r, "conninfo"), str(r, "cluster"))
	rc.slot = str(r, "slot")
	if rc.addrs == nil {
		// Where it connects from, to tell apart standbys of one name.
		rc.addrs, _ = net.DefaultResolver.LookupHost(ctx, rc.DSN.Host)
		if rc.addrs == nil {
			rc.addrs = []string{}
		}
	}
	return nil
}

// standbyName is the application_name a standby's walreceiver uses: the one
// in primary_conninfo, else cluster_name, else "walreceiver".
func standbyName(conninfo, cluster string) string {
	for _, f := range strings.Fields(conninfo) {
		if k, v, ok := strings.Cut(f, "="); ok && k == "application_name" {
			return strings.Trim(v, "'")
		}
	}
	if strings.HasPrefix(conninfo, "postgres") {
		if u, err := url.Parse(conninfo); err == nil && u.Query().Get("application_name") != "" {
			return u.Query().Get("application_name")
		}
	}
	if cluster != "" {
		return cluster
	}
	return "walreceiver"
}

// slotRow is one physical replication slot as the primary lists it.
type slotRow struct {
	name, restart string
	active        bool
	inactiveSince time.Time
}

func parseSlots(v string) []slotRow {
	var out []slotRow
	if v == "" {
		return nil
	}
	for _, item := range strings.Split(v, ",") {
		f := strings.Split(item, "=")
		if len(f) < 3 {
			continue
		}
		sl := slotRow{name: f[0], restart: f[1], active: f[2] == "true"}
		if len(f) > 3 {
			if e := floatPtr(&f[3]); e != nil {
				sl.inactiveSince = epoch(*e)
			}
		}
		out = append(out, sl)
	}
	return out
}

// rowNames names each walsender's row by its application_name. When two
// share one (standbys left with the default "walreceiver"), each is told
// by its slot (app/slot: a name the DBA chose, and stable across
// reconnects), else by where it connects from (app@addr), and its port
// when even that is shared.
func rowNames(rs []raw) {
	count := func(key func(*raw) string) map[string]int {
		n := map[string]int{}
		for i := range rs {
			n[key(&rs[i])]++
		}
		return n
	}
	byApp := count(func(x *raw) string { return x.app })
	// Among those that have no slot to be told by.
	byAddr := count(func(x *raw) string {
		if x.slot != "" {
			return ""
		}
		return x.app + "@" + x.clientAddr
	})
	for i := range rs {
		x := &rs[i]
		switch {
		case byApp[x.app] == 1:
			x.name = x.app
		case x.slot != "":
			x.name = x.app + "/" + x.slot
		case byAddr[x.app+"@"+x.clientAddr] == 1:
			x.name = x.app + "@" + x.clientAddr
		default:
			x.name = x.app + "@" + x.clientAddr + ":" + x.clientPort
		}
	}
}

// claim finds the walsender row of a standby named with --replica-dsn: the
// one streaming from its slot, else the one with its application_name
// (among several, the one connecting from its address), never one that
// another named standby has taken.
func claim(rs []raw, rc *replicaConn) int {
	if rc.slot != "" {
		for i := range rs {
			if !rs[i].named && rs[i].slot == rc.slot {
				return i
			}
		}
	}
	found := -1
	for i := range rs {
		x := &rs[i]
		// Once the standby told its slot (or that it has none), a
		// walsender streaming from another slot is another standby.
		if x.named || rc.known != "" && x.slot != rc.slot || x.app != rc.known && !(rc.Named && x.app == rc.Name) {
			continue
		}
		if found < 0 {
			found = i
		}
		if slices.Contains(rc.addrs, x.clientAddr) {
			return i
		}
	}
	return found
}

func (*pgWatcher) poll(ctx context.Context, c *sql.Conn, reps []*replicaConn) (*snapshot, error) {
	rows, err := dbconn.QueryMaps(ctx, c, pgReplication)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	prim, err := dbconn.QueryMaps(ctx, c, pgPrimary)
	if err != nil {
		return nil, err
	}
	at := time.Now()
	if len(prim) != 1 {
		return nil, fmt.Errorf("pg_current_wal_lsn(): no answer")
	}
	s := &snapshot{at: at, logPosition: str(prim[0], "lsn"), logBytes: lsnPtr(prim[0]["lsn"])}
	if f := floatPtr(prim[0]["now"]); f != nil {
		s.serverNow = epoch(*f)
		s.serverOffset = s.serverNow.Sub(t0.Add(at.Sub(t0) / 2))
	}
	for _, r := range rows {
		x := raw{app: str(r, "application_name"), present: true, engineState: str(r, "state"), syncState: str(r, "sync_state"),
			clientAddr: str(r, "client_addr"), clientPort: str(r, "client_port"), slot: str(r, "slot"),
			sent: lsnPtr(r["sent"]), write: lsnPtr(r["write"]), flush: lsnPtr(r["flush"]), replay: lsnPtr(r["replay"]),
			writeLag: durPtr(r["write_lag"]), flushLag: durPtr(r["flush_lag"]), replayLag: durPtr(r["replay_lag"]),
			positions: map[string]string{"current_lsn": s.logPosition}}
		if x.app == "" {
			x.app = "(unnamed)"
		}
		if x.clientAddr == "" {
			x.clientAddr = "local"
		}
		if f := floatPtr(r["reply_time"]); f != nil {
			x.replyTime = epoch(*f)
		}
		x.held = x.flush
		for _, k := range []string{"sent", "write", "flush", "replay"} {
			if v := r[k]; v != nil {
				x.positions[k+"_lsn"] = *v
			}
		}
		s.replicas = append(s.replicas, x)
	}
	rowNames(s.replicas)
	// The standbys given with --replica-dsn: one row each, their walsender
	// (by slot or name) or, when the primary has none, a row of their own.
	for _, rc := range reps {
		idx := claim(s.replicas, rc)
		if idx < 0 {
			s.replicas = append(s.replicas, raw{slot: rc.slot, engineState: "not connected to the primary"})
			idx = len(s.replicas) - 1
		}
		x := &s.replicas[idx]
		x.name, x.named = rc.Name, true
		if x.slot == "" {
			x.slot = rc.slot
		}
		if rc.conn == nil {
			x.gap = rc.gapCopy()
			continue
		}
		q0 := time.Now()
		sr, err := dbconn.QueryMaps(ctx, rc.conn.Conn, pgStandby)
		q1 := time.Now()
		if err != nil || len(sr) != 1 {
			if err == nil {
				err = fmt.Errorf("no answer from the standby")
			}
			rc.fail(err)
			x.gap = rc.gapCopy()
			continue
		}
		r := sr[0]
		if p := str(r, "paused"); p != "" {
			b := p == "true"
			x.replayPaused = &b
		}
		if f := floatPtr(r["now"]); f != nil {
			x.standbyNow = epoch(*f)
			if !s.serverNow.IsZero() {
				off := x.standbyNow.Sub(q0.Add(q1.Sub(q0)/2)) - s.serverOffset
				x.clockOffset = &off
			}
		}
		if sl := str(r, "slot"); sl != "" {
			rc.slot = sl
		}
		if x.positions == nil {
			x.positions = map[string]string{}
		}
		for _, k := range []string{"receive", "replay"} {
			if v := r[k]; v != nil {
				x.positions["standby_"+k+"_lsn"] = *v
			}
		}
		x.held = maxPos(x.held, lsnPtr(r["receive"]))
		x.receiverWait = waitEvent(str(r, "receiver_wait"))
		status := str(r, "status")
		if !x.present {
			if status == "" {
				status = "none"
			}
			x.engineState = "not connected to the primary (walreceiver: " + status + ")"
		}
	}
	// Physical slots: the WAL each keeps on the primary, on the row of the
	// replica that uses it; a slot no row uses is a replica of its own
	// (silent: the primary keeps WAL for it, nothing streams from it).
	for _, sl := range parseSlots(str(prim[0], "slots")) {
		idx := slices.IndexFunc(s.replicas, func(x raw) bool { return x.slot == sl.name })
		if idx < 0 {
			s.replicas = append(s.replicas, raw{name: sl.name, slot: sl.name, slotOnly: true, engineState: "replication slot not in use"})
			idx = len(s.replicas) - 1
		}
		x := &s.replicas[idx]
		restart := lsnPtr(&sl.restart)
		x.slotRetained = sub(s.logBytes, restart)
		x.slotInactiveSince = sl.inactiveSince
		// A physical slot's restart_lsn is the last flush its standby
		// reported: what it is known to hold.
		x.held = maxPos(x.held, restart)
		if x.positions == nil {
			x.positions = map[string]string{}
		}
		if sl.restart != "" {
			x.positions["slot_restart_lsn"] = sl.restart
		}
	}
	return s, nil
}

func maxPos(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil || *a >= *b:
		return a
	}
	return b
}
