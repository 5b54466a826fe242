package replication

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/url"
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
	pgReplication = `SELECT application_name, state, sync_state,
  sent_lsn::text AS sent, write_lsn::text AS write, flush_lsn::text AS flush, replay_lsn::text AS replay,
  extract(epoch FROM write_lag)::float8 AS write_lag, extract(epoch FROM flush_lag)::float8 AS flush_lag,
  extract(epoch FROM replay_lag)::float8 AS replay_lag,
  extract(epoch FROM reply_time)::float8 AS reply_time, extract(epoch FROM now() - reply_time)::float8 AS reply_age
FROM pg_stat_replication WHERE state IS DISTINCT FROM 'backup' ORDER BY application_name, pid`
	// Read after the standbys, so the WAL position is never behind them.
	pgPrimary = `SELECT pg_current_wal_lsn()::text AS lsn, extract(epoch FROM now())::float8 AS now,
  (SELECT string_agg(slot_name || '=' || coalesce(restart_lsn::text, ''), ',') FROM pg_replication_slots
   WHERE slot_type = 'physical' AND NOT active) AS idle_slots`
	pgStandbyCheck = `SELECT pg_is_in_recovery()::text AS recovery, current_setting('cluster_name') AS cluster,
  (SELECT conninfo FROM pg_stat_wal_receiver) AS conninfo`
	pgStandby = `SELECT pg_last_wal_receive_lsn()::text AS receive, pg_last_wal_replay_lsn()::text AS replay,
  pg_is_wal_replay_paused()::text AS paused, (SELECT status FROM pg_stat_wal_receiver) AS status`
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
	// The user's name is what is shown; the primary's is what matches.
	rc.known = standbyName(str(r, "conninfo"), str(r, "cluster"))
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

func (*pgWatcher) poll(ctx context.Context, c *sql.Conn, reps []*replicaConn) (*snapshot, error) {
	rows, err := dbconn.QueryMaps(ctx, c, pgReplication)
	if err != nil {
		return nil, err
	}
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
	}
	names := map[string]int{}
	for _, r := range rows {
		name := str(r, "application_name")
		if name == "" {
			name = "(unnamed)"
		}
		names[name]++
		if n := names[name]; n > 1 {
			name = fmt.Sprintf("%s#%d", name, n)
		}
		x := raw{name: name, present: true, engineState: str(r, "state"), syncState: str(r, "sync_state"),
			sent: lsnPtr(r["sent"]), write: lsnPtr(r["write"]), flush: lsnPtr(r["flush"]), replay: lsnPtr(r["replay"]),
			writeLag: durPtr(r["write_lag"]), flushLag: durPtr(r["flush_lag"]), replayLag: durPtr(r["replay_lag"]),
			replyAge: durPtr(r["reply_age"]), positions: map[string]string{"current_lsn": s.logPosition}}
		if f := floatPtr(r["reply_time"]); f != nil {
			x.replyTime = epoch(*f)
		}
		for _, k := range []string{"sent", "write", "flush", "replay"} {
			if v := r[k]; v != nil {
				x.positions[k+"_lsn"] = *v
			}
		}
		s.replicas = append(s.replicas, x)
	}
	// The standbys given with --replica-dsn: their own view.
	for _, rc := range reps {
		idx := -1
		for i := range s.replicas {
			if s.replicas[i].name == rc.known || rc.Named && s.replicas[i].name == rc.Name {
				idx = i
				break
			}
		}
		if idx < 0 {
			s.replicas = append(s.replicas, raw{name: rc.Name, engineState: "not connected to the primary"})
			idx = len(s.replicas) - 1
		}
		x := &s.replicas[idx]
		x.name = rc.Name
		if rc.conn == nil {
			x.gap = rc.gapCopy()
			continue
		}
		sr, err := dbconn.QueryMaps(ctx, rc.conn.Conn, pgStandby)
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
		if x.positions == nil {
			x.positions = map[string]string{}
		}
		for _, k := range []string{"receive", "replay"} {
			if v := r[k]; v != nil {
				x.positions["standby_"+k+"_lsn"] = *v
			}
		}
		status := str(r, "status")
		if !x.present {
			if status == "" {
				status = "none"
			}
			x.engineState = "not connected to the primary (walreceiver: " + status + ")"
		}
	}
	// Inactive physical slots: a replica the primary keeps WAL for but that
	// is not connected. Shown as silent, with the WAL it holds back.
	if v := str(prim[0], "idle_slots"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			name, restart, _ := strings.Cut(kv, "=")
			dup := false
			for _, x := range s.replicas {
				if x.name == name {
					dup = true
				}
			}
			if dup {
				continue
			}
			x := raw{name: name, engineState: "replication slot not in use", positions: map[string]string{"slot_restart_lsn": restart}}
			if restart != "" {
				x.sent = lsnPtr(&restart)
			}
			s.replicas = append(s.replicas, x)
		}
	}
	return s, nil
}
