package replication

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
)

// SQL Server queries (VIEW SERVER STATE; SQL Server 2022: VIEW SERVER
// PERFORMANCE STATE). Every secondary of every availability group whose
// primary this server is appears in the primary's DMVs, one row per
// replica and database: no connection to the secondaries is needed.
const (
	MSSQLCheck = `SELECT CAST(ISNULL(SERVERPROPERTY('IsHadrEnabled'), 0) AS int) AS hadr, SUSER_SNAME() AS usr,
  (SELECT COUNT(*) FROM sys.dm_hadr_availability_replica_states
   WHERE is_local = 1 AND role_desc = 'PRIMARY') AS primaries`

	MSSQLReplicaStates = `SELECT ar.replica_server_name AS replica, adc.database_name AS database_name, ag.name AS ag,
  ar.availability_mode_desc AS availability_mode, drs.synchronization_state_desc AS sync_state,
  CAST(drs.is_suspended AS int) AS suspended, drs.suspend_reason_desc AS suspend_reason,
  ars.connected_state_desc AS connected_state, ars.last_connect_error_description AS connect_error,
  drs.log_send_queue_size AS log_send_queue_kb, drs.log_send_rate AS log_send_rate_kb,
  drs.redo_queue_size AS redo_queue_kb, drs.redo_rate AS redo_rate_kb,
  drs.secondary_lag_seconds AS secondary_lag_seconds
FROM sys.dm_hadr_database_replica_states AS drs
JOIN sys.availability_replicas AS ar ON ar.replica_id = drs.replica_id
JOIN sys.availability_groups AS ag ON ag.group_id = drs.group_id
JOIN sys.availability_databases_cluster AS adc
  ON adc.group_id = drs.group_id AND adc.group_database_id = drs.group_database_id
LEFT JOIN sys.dm_hadr_availability_replica_states AS ars ON ars.replica_id = drs.replica_id
WHERE drs.is_local = 0
ORDER BY ar.replica_server_name, adc.database_name`

	// The '/sec' counters are cumulative raw values: sampled twice, their
	// difference over the time between the samples is the rate.
	MSSQLCounters = `SELECT RTRIM(object_name) AS object_name, RTRIM(counter_name) AS counter_name,
  RTRIM(instance_name) AS instance_name, cntr_value
FROM sys.dm_os_performance_counters
WHERE counter_name = 'Log Bytes Flushed/sec' AND object_name LIKE '%:Databases%'`
)

// CounterSample is one database's cumulative counter as last read.
type CounterSample struct {
	value int64
	at    time.Time
}

type msWatcher struct {
	prev map[string]CounterSample
}

func (*msWatcher) queriesPerPoll(int) int { return 2 }

func (w *msWatcher) check(ctx context.Context, c *sql.Conn) error {
	rows, err := dbconn.QueryMaps(ctx, c, MSSQLCheck)
	user := ""
	if len(rows) == 1 {
		user = str(rows[0], "usr")
	}
	if dbconn.KindOf(err) == dbconn.Permission {
		return dbconn.Permissionf("the login lacks VIEW SERVER STATE (SQL Server 2022: VIEW SERVER PERFORMANCE STATE), needed for sys.dm_hadr_database_replica_states and sys.dm_os_performance_counters: GRANT VIEW SERVER STATE TO [login]")
	}
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return fmt.Errorf("unexpected answer to the availability group check")
	}
	if str(rows[0], "hadr") != "1" {
		return dbconn.NotPrimaryf("Always On availability groups are not enabled on this server (SERVERPROPERTY('IsHadrEnabled') is 0)")
	}
	if n, _ := strconv.Atoi(str(rows[0], "primaries")); n == 0 {
		return dbconn.NotPrimaryf("this server is not the primary replica of any availability group: point --dsn at the primary")
	}
	// A first sample of the counters, so the first poll already has rates.
	if _, err := w.counters(ctx, c); err != nil {
		if dbconn.KindOf(err) == dbconn.Permission {
			return dbconn.Permissionf("login %s lacks VIEW SERVER STATE, needed for sys.dm_os_performance_counters: GRANT VIEW SERVER STATE TO [%s]", user, user)
		}
		return err
	}
	return nil
}

func (*msWatcher) checkReplica(context.Context, *replicaConn) error { return nil }

func (w *msWatcher) counters(ctx context.Context, c *sql.Conn) (map[string]*float64, error) {
	rows, err := dbconn.QueryMaps(ctx, c, MSSQLCounters)
	if err != nil {
		return nil, err
	}
	return MapMSSQLCounters(rows, w.prev, time.Now()), nil
}

func (w *msWatcher) poll(ctx context.Context, c *sql.Conn, _ []*replicaConn) (*snapshot, error) {
	states, err := dbconn.QueryMaps(ctx, c, MSSQLReplicaStates)
	if err != nil {
		return nil, err
	}
	gen, err := w.counters(ctx, c)
	if err != nil {
		return nil, err
	}
	return &snapshot{at: time.Now(), replicas: mapMSSQLStates(states, gen)}, nil
}

// MapMSSQLCounters turns a sample of 'Log Bytes Flushed/sec' rows into a
// rate per database against the previous sample (kept in prev, which it
// updates). A database seen for the first time has no rate yet.
func MapMSSQLCounters(rows []map[string]*string, prev map[string]CounterSample, at time.Time) map[string]*float64 {
	out := map[string]*float64{}
	for _, r := range rows {
		if !strings.EqualFold(str(r, "counter_name"), "Log Bytes Flushed/sec") {
			continue
		}
		db := str(r, "instance_name")
		v, err := strconv.ParseInt(strings.TrimSpace(str(r, "cntr_value")), 10, 64)
		if err != nil {
			continue
		}
		if p, ok := prev[db]; ok && at.After(p.at) && v >= p.value {
			rate := float64(v-p.value) / at.Sub(p.at).Seconds()
			out[db] = &rate
		} else {
			out[db] = nil
		}
		prev[db] = CounterSample{value: v, at: at}
	}
	return out
}

func kb(v *string) *int64 {
	if v == nil {
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(*v), 10, 64)
	if err != nil {
		return nil
	}
	n *= 1024
	return &n
}

func kbRate(v *string) *float64 {
	b := kb(v)
	if b == nil {
		return nil
	}
	f := float64(*b)
	return &f
}

// mapMSSQLStates turns sys.dm_hadr_database_replica_states rows into
// replicas, one per secondary and database.
func mapMSSQLStates(rows []map[string]*string, gen map[string]*float64) []raw {
	var out []raw
	for _, r := range rows {
		x := raw{name: str(r, "replica"), database: str(r, "database_name"), present: true,
			syncState: strings.ToLower(str(r, "availability_mode")), engineState: str(r, "sync_state"),
			unsent: kb(r["log_send_queue_kb"]), unreplayed: kb(r["redo_queue_kb"]),
			sendRate: kbRate(r["log_send_rate_kb"]), replayRate: kbRate(r["redo_rate_kb"]),
			secondaryLag: durPtr(r["secondary_lag_seconds"]), generation: gen[str(r, "database_name")],
			positions: map[string]string{"availability_group": str(r, "ag")}}
		if str(r, "suspended") == "1" {
			x.stopped = true
			x.engineState += " (data movement suspended: " + str(r, "suspend_reason") + ")"
		}
		if strings.EqualFold(str(r, "connected_state"), "DISCONNECTED") {
			x.silent = true
			x.engineState = "DISCONNECTED"
			x.lastErr = str(r, "connect_error")
		}
		out = append(out, x)
	}
	return out
}
