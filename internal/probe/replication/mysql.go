package replication

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/result"
)

// MySQL and MariaDB statements, newest spelling first. MySQL 8.4 removed
// SHOW MASTER STATUS and SHOW SLAVE STATUS; MariaDB has SHOW BINLOG STATUS
// (10.5.2+) and SHOW REPLICA STATUS (10.5.1+) with the old column names.
var (
	myStatusQueries  = []string{"SHOW BINARY LOG STATUS", "SHOW BINLOG STATUS", "SHOW MASTER STATUS"}
	myReplicaQueries = []string{"SHOW REPLICA STATUS", "SHOW SLAVE STATUS"}
)

const myBinaryLogs = "SHOW BINARY LOGS"

type myWatcher struct {
	statusQuery string
}

func (*myWatcher) queriesPerPoll(int) int { return 2 }

// isSyntax says the server does not know this spelling of a statement.
func isSyntax(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1064
}

// firstSpelling runs the first statement of qs the server understands.
func firstSpelling(ctx context.Context, c *sql.Conn, qs []string) (string, []map[string]*string, error) {
	var err error
	for _, q := range qs {
		var rows []map[string]*string
		rows, err = dbconn.QueryMaps(ctx, c, q)
		if err == nil {
			return q, rows, nil
		}
		if !isSyntax(err) {
			return q, nil, err
		}
	}
	return "", nil, err
}

// whoAmI is the session's account and the server's version.
func whoAmI(ctx context.Context, c *sql.Conn) (user, version string, err error) {
	err = c.QueryRowContext(ctx, "SELECT CURRENT_USER(), VERSION()").Scan(&user, &version)
	return user, version, err
}

// account quotes user@host (CURRENT_USER()) for a GRANT statement.
func account(user string) string {
	name, host := user, "%"
	if i := strings.LastIndexByte(user, '@'); i >= 0 {
		name, host = user[:i], user[i+1:]
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	return q(name) + "@" + q(host)
}

// mariaVersion reads a MariaDB version ("10.11.19-MariaDB-0+deb12u1") as
// major, minor, patch; ok is false for MySQL.
func mariaVersion(v string) (major, minor, patch int, ok bool) {
	if !strings.Contains(strings.ToLower(v), "mariadb") {
		return 0, 0, 0, false
	}
	num, _, _ := strings.Cut(v, "-")
	f := strings.Split(num, ".")
	n := make([]int, 3)
	for i := 0; i < len(f) && i < 3; i++ {
		n[i], _ = strconv.Atoi(f[i])
	}
	return n[0], n[1], n[2], true
}

// privilege is what a user needs on this server to read replication
// state: on a source (replica false) the binary log position, on a
// replica SHOW REPLICA STATUS. MariaDB 10.5 split REPLICATION CLIENT: on
// 10.5.2+ the binary log needs BINLOG MONITOR (which REPLICATION CLIENT now
// names), and SHOW REPLICA STATUS needs REPLICA MONITOR (10.5.9+; from
// 10.5.2 to 10.5.8, REPLICATION SLAVE ADMIN). MySQL 5.7, 8.0 and 8.4 need
// REPLICATION CLIENT for both.
func privilege(version string, replica bool) string {
	major, minor, patch, maria := mariaVersion(version)
	after := func(a, b, c int) bool {
		return major > a || major == a && (minor > b || minor == b && patch >= c)
	}
	switch {
	case !maria || !after(10, 5, 2):
		return "REPLICATION CLIENT"
	case !replica:
		return "BINLOG MONITOR"
	case after(10, 5, 9):
		return "REPLICA MONITOR"
	}
	return "REPLICATION SLAVE ADMIN"
}

// missing is the error for a user who lacks what the server needs, with
// the GRANT that works on this version.
func missing(user, version, what string, replica bool) error {
	p := privilege(version, replica)
	return dbconn.Permissionf("user %s lacks %s on this server (%s), needed for %s: GRANT %s ON *.* TO %s",
		user, p, version, what, p, account(user))
}

func (w *myWatcher) check(ctx context.Context, c *sql.Conn) error {
	user, version, err := whoAmI(ctx, c)
	if err != nil {
		return err
	}
	rows, err := dbconn.QueryMaps(ctx, c, "SELECT @@log_bin AS log_bin")
	if err != nil {
		return err
	}
	if len(rows) == 1 && (str(rows[0], "log_bin") == "0" || strings.EqualFold(str(rows[0], "log_bin"), "OFF")) {
		return dbconn.NotPrimaryf("binary logging is off on this server (log_bin=OFF): it is not a replication source; point --dsn at the source")
	}
	q, _, err := firstSpelling(ctx, c, myStatusQueries)
	if err == nil {
		_, err = dbconn.QueryMaps(ctx, c, myBinaryLogs)
	}
	if dbconn.KindOf(err) == dbconn.Permission {
		return missing(user, version, "the binary log position", false)
	}
	if err != nil {
		return err
	}
	w.statusQuery = q
	return nil
}

// CheckBinlog checks that a MySQL or MariaDB server writes a binary log
// whose position this user may read, as db repl needs of a source (the
// error a dbconn.Error naming the GRANT this version wants). The log-rate
// probe shares it.
func CheckBinlog(ctx context.Context, c *sql.Conn) error { return (&myWatcher{}).check(ctx, c) }

func (w *myWatcher) checkReplica(ctx context.Context, rc *replicaConn) error {
	user, version, err := whoAmI(ctx, rc.conn.Conn)
	if err != nil {
		return err
	}
	q, rows, err := firstSpelling(ctx, rc.conn.Conn, myReplicaQueries)
	if dbconn.KindOf(err) == dbconn.Permission {
		return missing(user, version, "SHOW REPLICA STATUS", true)
	}
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return dbconn.NotPrimaryf("this server is not a replica (%s is empty): --replica-dsn must name a replica of the source", q)
	}
	rc.statusQuery = q
	return nil
}

type binlog struct {
	name string
	size int64
}

// absPos is a binary log coordinate as a byte offset from the start of the
// first binary log the source still has.
func absPos(logs []binlog, file string, pos int64) *int64 {
	var sum int64
	for _, l := range logs {
		if l.name == file {
			v := sum + pos
			return &v
		}
		sum += l.size
	}
	return nil
}

func (w *myWatcher) poll(ctx context.Context, c *sql.Conn, reps []*replicaConn) (*snapshot, error) {
	// Replicas first, then the source: the source's position is then never
	// behind what a replica has read.
	type repRow struct {
		rc  *replicaConn
		row map[string]*string
	}
	var rr []repRow
	for _, rc := range reps {
		if rc.conn == nil {
			rr = append(rr, repRow{rc: rc})
			continue
		}
		rows, err := dbconn.QueryMaps(ctx, rc.conn.Conn, rc.statusQuery)
		if err != nil || len(rows) == 0 {
			if err == nil {
				err = fmt.Errorf("%s is empty: replication is no longer configured", rc.statusQuery)
			}
			rc.fail(err)
			rr = append(rr, repRow{rc: rc})
			continue
		}
		rr = append(rr, repRow{rc: rc, row: rows[0]})
	}
	logRows, err := dbconn.QueryMaps(ctx, c, myBinaryLogs)
	if err != nil {
		return nil, err
	}
	st, err := dbconn.QueryMaps(ctx, c, w.statusQuery)
	if err != nil {
		return nil, err
	}
	s := &snapshot{at: time.Now()}
	logs := make([]binlog, 0, len(logRows))
	for _, r := range logRows {
		n, _ := strconv.ParseInt(str(r, "File_size"), 10, 64)
		logs = append(logs, binlog{name: str(r, "Log_name"), size: n})
	}
	if len(st) == 1 {
		file := str(st[0], "File")
		pos, _ := strconv.ParseInt(str(st[0], "Position"), 10, 64)
		s.logPosition = fmt.Sprintf("%s:%d", file, pos)
		s.logBytes = absPos(logs, file, pos)
	}
	for _, x := range rr {
		s.replicas = append(s.replicas, mapMySQLReplica(x.rc.Name, x.row, logs, s.logPosition, x.rc.gapCopy()))
	}
	return s, nil
}

// mapMySQLReplica turns one SHOW REPLICA STATUS / SHOW SLAVE STATUS row
// (either spelling) into stage positions on the source's binary log.
func mapMySQLReplica(name string, row map[string]*string, logs []binlog, source string, gap *result.Gap) raw {
	x := raw{name: name, named: true, gap: gap}
	if row == nil {
		x.engineState, x.unreachable = "no answer from the replica", true
		return x
	}
	readFile := str(row, "Source_Log_File", "Master_Log_File")
	readPos, _ := strconv.ParseInt(str(row, "Read_Source_Log_Pos", "Read_Master_Log_Pos"), 10, 64)
	execFile := str(row, "Relay_Source_Log_File", "Relay_Master_Log_File")
	execPos, _ := strconv.ParseInt(str(row, "Exec_Source_Log_Pos", "Exec_Master_Log_Pos"), 10, 64)
	x.present = true
	x.io = str(row, "Replica_IO_Running", "Slave_IO_Running")
	x.sqlThread = str(row, "Replica_SQL_Running", "Slave_SQL_Running")
	x.stopped = x.io != "Yes" || x.sqlThread != "Yes"
	x.engineState = str(row, "Replica_IO_State", "Slave_IO_State")
	if x.engineState == "" {
		x.engineState = "IO thread " + x.io
	}
	x.sent = absPos(logs, readFile, readPos)
	x.replay = absPos(logs, execFile, execPos)
	// What the IO thread has fetched is in the replica's relay log.
	x.held = x.sent
	if v, ok := col(row, "Seconds_Behind_Source", "Seconds_Behind_Master"); ok {
		if v == nil || *v == "" {
			x.sbmNull = true
		} else if n, err := strconv.ParseInt(*v, 10, 64); err == nil {
			d := time.Duration(n) * time.Second
			x.secondsBehind = &d
		}
	}
	for _, k := range []string{"Last_IO_Error", "Last_SQL_Error"} {
		if e := str(row, k); e != "" {
			x.lastErr = e
			break
		}
	}
	x.positions = map[string]string{"source": source,
		"read": fmt.Sprintf("%s:%d", readFile, readPos), "exec": fmt.Sprintf("%s:%d", execFile, execPos)}
	return x
}
