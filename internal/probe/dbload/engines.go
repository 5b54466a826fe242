package dbload

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/narrows/narrows/internal/dbconn"
)

// exec runs each statement in turn.
func exec(ctx context.Context, c *dbconn.Conn, qs ...string) error {
	for _, q := range qs {
		if _, err := c.Conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// errNotOurs is a table of narrows' name that is not the one narrows
// created (replaced mid-run by another of the same name).
var errNotOurs = errors.New("not narrows' own table")

// PostgreSQL: a bytea column stored EXTERNAL (never compressed), rows sent
// as one bytea[] parameter per batch, paced on pg_current_wal_lsn().
//
// The table is known by its OID, not its name: every step that writes to
// or removes it first checks that the name still leads to that object and
// that the object carries the marker, under a lock that keeps it so.
type pgEngine struct {
	table     string
	qual      string // "schema"."table", as CREATE and DROP name it
	oid       uint32 // the table narrows created (or its own leftover); 0: none
	insertSQL string
}

func newPG(t string) *pgEngine { return &pgEngine{table: t} }

func (e *pgEngine) session() engine { c := *e; return &c }

func (*pgEngine) measure() string { return "wal_lsn" }

// preflight refuses a server that cannot take the load: a standby, or a
// primary whose every commit waits for a synchronous standby that is not
// there.
func (e *pgEngine) preflight(ctx context.Context, c *dbconn.Conn) error {
	var standby bool
	var readOnly string
	if err := c.Conn.QueryRowContext(ctx, `SELECT pg_is_in_recovery(), current_setting('transaction_read_only')`).Scan(&standby, &readOnly); err != nil {
		return err
	}
	if standby {
		return dbconn.NotPrimaryf("db load: this server is a standby (pg_is_in_recovery() is true), read-only: point --dsn at the primary")
	}
	if readOnly == "on" {
		return dbconn.NotPrimaryf("db load: this session is read-only (transaction_read_only = on: default_transaction_read_only is set for the server, the database or the user): db load writes; use a user and database that may write, on the primary")
	}
	if why, err := pgSyncBlocked(ctx, c); err != nil || why != "" {
		if err != nil {
			return err
		}
		return &dbconn.Error{Kind: dbconn.Blocked, Msg: "db load: " + why + ": nothing was created"}
	}
	var schema sql.NullString
	if err := c.Conn.QueryRowContext(ctx, `SELECT quote_ident(current_schema())`).Scan(&schema); err != nil {
		return err
	}
	if !schema.Valid {
		return dbconn.Refusedf("db load: no schema to create the scratch table in: the user's search_path names no schema that exists")
	}
	e.qual = schema.String + "." + pgIdent(e.table)
	e.insertSQL = fmt.Sprintf(`WITH ins AS (INSERT INTO %s (payload) SELECT unnest($1::bytea[]) RETURNING tableoid)
SELECT count(*) FROM ins WHERE 1 / (tableoid = $2::oid)::int = 1`, e.qual)
	return nil
}

// pgSyncBlocked says why every commit would wait, or "" when it would
// not: synchronous_standby_names names standbys, synchronous_commit waits
// for them, and none that counts is streaming. A standby whose state the
// user may not see counts: narrows refuses only what it knows.
func pgSyncBlocked(ctx context.Context, c *dbconn.Conn) (string, error) {
	var names, commit string
	var waiting int
	err := c.Conn.QueryRowContext(ctx, `SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit'),
  (SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL OR sync_state IN ('sync', 'quorum'))`).Scan(&names, &commit, &waiting)
	if err != nil || strings.TrimSpace(names) == "" || waiting > 0 {
		return "", err
	}
	switch commit {
	case "on", "remote_write", "remote_apply":
		return fmt.Sprintf("every commit waits for a synchronous standby (synchronous_standby_names = '%s', synchronous_commit = %s) and none is connected: start the standby, or take it out of synchronous_standby_names on the primary", names, commit), nil
	}
	return "", nil
}

// pgIdent quotes a name as quote_ident does (the name is checked by
// ValidTable: letters, digits and _).
func pgIdent(s string) string { return `"` + s + `"` }

// owner looks up the object the quoted name leads to, exactly as CREATE
// and DROP will: no case folding, in the schema CREATE uses.
func (e *pgEngine) owner(ctx context.Context, c *dbconn.Conn) (bool, bool, error) {
	var oid sql.NullInt64
	var marker string
	err := c.Conn.QueryRowContext(ctx, `SELECT to_regclass($1)::oid, coalesce(obj_description(to_regclass($1), 'pg_class'), '')`, e.qual).Scan(&oid, &marker)
	if err != nil || !oid.Valid {
		return false, false, err
	}
	if marker == Marker {
		e.oid = uint32(oid.Int64)
		return true, true, nil
	}
	return true, false, nil
}

// create makes and marks the table in one transaction: whatever ends the
// run, there is never a table of narrows' without its marker.
func (e *pgEngine) create(ctx context.Context, c *dbconn.Conn) error {
	tx, err := c.Conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		fmt.Sprintf(`CREATE TABLE %s (payload bytea NOT NULL)`, e.qual),
		fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN payload SET STORAGE EXTERNAL`, e.qual),
		fmt.Sprintf(`COMMENT ON TABLE %s IS '%s'`, e.qual, Marker),
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	var oid int64
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1)::oid`, e.qual).Scan(&oid); err != nil {
		return err
	}
	// Known before the commit: a commit that hangs (a synchronous standby
	// that is down) may still take effect, and the table is then ours to
	// drop.
	e.oid = uint32(oid)
	return tx.Commit()
}

// guarded runs q on the table only while the name leads to narrows' own
// object: it locks what the name leads to, checks that object's OID and
// marker, and runs q in the same transaction.
func (e *pgEngine) guarded(ctx context.Context, c *dbconn.Conn, q string) error {
	if e.oid == 0 {
		return nil
	}
	tx, err := c.Conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var ours bool
	err = tx.QueryRowContext(ctx, `SELECT to_regclass($1)::oid = $2::oid AND coalesce(obj_description($2::oid, 'pg_class'), '') = $3`, e.qual, e.oid, Marker).Scan(&ours)
	if err == nil && ours {
		_, err = tx.ExecContext(ctx, fmt.Sprintf(`LOCK TABLE %s IN ACCESS EXCLUSIVE MODE`, e.qual))
		if err == nil {
			// The name cannot move while the lock is held: check again.
			err = tx.QueryRowContext(ctx, `SELECT to_regclass($1)::oid = $2::oid`, e.qual, e.oid).Scan(&ours)
		}
	}
	switch {
	case err != nil:
		return err
	case !ours:
		return errNotOurs
	}
	if _, err := tx.ExecContext(ctx, q); err != nil {
		return err
	}
	return tx.Commit()
}

// drop removes narrows' table; gone already is done.
func (e *pgEngine) drop(ctx context.Context, c *dbconn.Conn) error {
	var gone bool
	if err := c.Conn.QueryRowContext(ctx, `SELECT NOT EXISTS (SELECT FROM pg_class WHERE oid = $1::oid)`, e.oid).Scan(&gone); err != nil {
		return err
	}
	if gone {
		e.oid = 0
		return nil
	}
	if err := e.guarded(ctx, c, `DROP TABLE `+e.qual); err != nil {
		return err
	}
	e.oid = 0
	return nil
}

func (e *pgEngine) truncate(ctx context.Context, c *dbconn.Conn) error {
	return e.guarded(ctx, c, `TRUNCATE `+e.qual)
}

// insert writes the batch into narrows' table in one statement that fails
// (and so commits nothing) if any row went to another table: a table
// swapped in under the name never receives narrows' rows.
func (e *pgEngine) insert(ctx context.Context, c *dbconn.Conn, rows [][]byte) error {
	_, err := c.Conn.ExecContext(ctx, e.insertSQL, rows, e.oid)
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "22012" { // division_by_zero: a row went elsewhere
		return errNotOurs
	}
	return err
}

func (*pgEngine) logBytes(ctx context.Context, c *dbconn.Conn) (int64, error) {
	var s string
	if err := c.Conn.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&s); err != nil {
		return 0, err
	}
	return dbconn.ParseLSN(s)
}

// MySQL/MariaDB: a LONGBLOB column in InnoDB, one prepared multi-row
// INSERT, paced on the binary log position (falls back to payload bytes
// when the user may not read it).
//
// There is no OID: the table is known by a comment that holds the marker
// and this run's own token, looked up under the server's case rule
// (lower_case_table_names), and checked under LOCK TABLES before it is
// truncated or dropped. Its rows go in through a column named after the
// same token, which a table swapped in under the name does not have: the
// INSERT fails there, whole, without a round trip more.
type myEngine struct {
	table    string
	name     string // the table's name as the server stores it
	comment  string // the comment of narrows' own table; "": none
	column   string // the column named after this run's token
	stmt     *sql.Stmt
	stmtConn *dbconn.Conn
	args     []any // the statement's arguments, one per row
	noPos    bool
}

// session is the engine for another session on the same table: the
// table's identity is shared, the prepared statement is the session's.
func (e *myEngine) session() engine {
	c := *e
	c.stmt, c.stmtConn, c.args = nil, nil, nil
	return &c
}

func (e *myEngine) measure() string {
	if e.noPos {
		return "payload"
	}
	return "binlog_position"
}

func (e *myEngine) preflight(ctx context.Context, c *dbconn.Conn) error {
	var ro int
	if err := c.Conn.QueryRowContext(ctx, `SELECT @@read_only`).Scan(&ro); err != nil {
		return err
	}
	if ro != 0 {
		return dbconn.NotPrimaryf("db load: this server is read-only (read_only = ON), a replica: point --dsn at the source")
	}
	// Read-only in other ways: the session's transactions (MySQL 8 and
	// MariaDB 11.1+ spell it transaction_read_only, MariaDB before it
	// tx_read_only), or InnoDB itself. A variable this server does not
	// know is not a refusal.
	known := false
	for _, v := range []struct{ name, why string }{
		{"@@session.transaction_read_only", "this session is read-only (transaction_read_only = ON)"},
		{"@@session.tx_read_only", "this session is read-only (tx_read_only = ON)"},
		{"@@innodb_read_only", "InnoDB is read-only on this server (innodb_read_only = ON)"},
	} {
		if known && v.name == "@@session.tx_read_only" {
			continue // the older name of what was just read
		}
		var on int
		err := c.Conn.QueryRowContext(ctx, "SELECT "+v.name).Scan(&on)
		var my *mysql.MySQLError
		switch {
		case errors.As(err, &my) && my.Number == 1193: // ER_UNKNOWN_SYSTEM_VARIABLE
			continue
		case err != nil:
			return err
		case on != 0:
			return dbconn.NotPrimaryf("db load: %s: db load writes; point --dsn at a source that accepts writes", v.why)
		}
		known = true
	}
	return nil
}

// lookup finds the table the name leads to under the server's case rule:
// with lower_case_table_names = 0 names differing in case are different
// tables; otherwise they are one.
func (e *myEngine) lookup(ctx context.Context, c *dbconn.Conn) (exists bool, comment string, err error) {
	var lctn int
	if err := c.Conn.QueryRowContext(ctx, `SELECT @@lower_case_table_names`).Scan(&lctn); err != nil {
		return false, "", err
	}
	rows, err := c.Conn.QueryContext(ctx, `SELECT table_name, table_comment FROM information_schema.tables WHERE table_schema = DATABASE() AND LOWER(table_name) = LOWER(?)`, e.table)
	if err != nil {
		return false, "", err
	}
	defer rows.Close()
	for rows.Next() {
		var name, cm string
		if err := rows.Scan(&name, &cm); err != nil {
			return false, "", err
		}
		if name == e.table || lctn != 0 && strings.EqualFold(name, e.table) {
			e.name, exists, comment = name, true, cm
		}
	}
	return exists, comment, rows.Err()
}

func (e *myEngine) owner(ctx context.Context, c *dbconn.Conn) (bool, bool, error) {
	exists, comment, err := e.lookup(ctx, c)
	if err != nil || !exists || !strings.HasPrefix(comment, Marker) {
		return exists, false, err
	}
	e.comment = comment
	return true, true, nil
}

func (e *myEngine) create(ctx context.Context, c *dbconn.Conn) error {
	var token [8]byte
	rand.Read(token[:])
	comment := fmt.Sprintf("%s (run %x)", Marker, token)
	column := fmt.Sprintf("narrows_run_%x", token)
	if err := exec(ctx, c, fmt.Sprintf("CREATE TABLE `%s` (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload LONGBLOB NOT NULL, `%s` BOOLEAN NOT NULL) ENGINE=InnoDB COMMENT='%s'", e.table, column, comment)); err != nil {
		return err
	}
	e.comment, e.column = comment, column
	if _, err := e.logBytes(ctx, c); err != nil {
		e.noPos = true
	}
	return nil
}

// guarded runs q on the table only while it is narrows' own: under LOCK
// TABLES ... WRITE (so it cannot be renamed or replaced), its comment must
// be the one narrows gave it. A user without the LOCK TABLES privilege
// gets the check without the lock.
func (e *myEngine) guarded(ctx context.Context, c *dbconn.Conn, q string) error {
	if e.comment == "" {
		return nil
	}
	if e.stmt != nil {
		e.stmt.Close()
		e.stmt = nil
	}
	err := exec(ctx, c, "LOCK TABLES `"+e.table+"` WRITE")
	switch {
	case err == nil:
		defer exec(context.WithoutCancel(ctx), c, "UNLOCK TABLES")
	case dbconn.KindOf(err) != dbconn.Permission:
		return err
	}
	exists, comment, err := e.lookup(ctx, c)
	switch {
	case err != nil:
		return err
	case !exists || comment != e.comment:
		return errNotOurs
	}
	return exec(ctx, c, q)
}

// drop removes narrows' table; gone already is done.
func (e *myEngine) drop(ctx context.Context, c *dbconn.Conn) error {
	if e.comment == "" {
		return nil
	}
	if exists, _, err := e.lookup(ctx, c); err != nil || !exists {
		if err == nil {
			e.comment = ""
		}
		return err
	}
	if err := e.guarded(ctx, c, "DROP TABLE `"+e.table+"`"); err != nil {
		return err
	}
	e.comment = ""
	return nil
}

func (e *myEngine) truncate(ctx context.Context, c *dbconn.Conn) error {
	return e.guarded(ctx, c, "TRUNCATE TABLE `"+e.table+"`")
}

// insert prepares the multi-row INSERT once per session and batch size.
func (e *myEngine) insert(ctx context.Context, c *dbconn.Conn, rows [][]byte) error {
	if e.stmt == nil || e.stmtConn != c || len(e.args) != len(rows) {
		if e.stmt != nil {
			e.stmt.Close()
		}
		q := "INSERT INTO `" + e.table + "` (payload, `" + e.column + "`) VALUES " + strings.TrimSuffix(strings.Repeat("(?,1),", len(rows)), ",")
		st, err := c.Conn.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		e.stmt, e.stmtConn, e.args = st, c, make([]any, len(rows))
	}
	for i, r := range rows {
		e.args[i] = r
	}
	_, err := e.stmt.ExecContext(ctx, e.args...)
	var my *mysql.MySQLError
	if errors.As(err, &my) && my.Number == 1054 { // ER_BAD_FIELD_ERROR: the name leads to another table
		return errNotOurs
	}
	return err
}

var errNoPosition = errors.New("the server does not report a log position to this user")

func parseInt(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}

func (e *myEngine) logBytes(ctx context.Context, c *dbconn.Conn) (int64, error) {
	rows, err := dbconn.QueryMaps(ctx, c.Conn, "SHOW BINARY LOGS")
	if err != nil {
		return 0, err
	}
	// The active log's size is its current position.
	var sum int64
	found := false
	for _, r := range rows {
		if v := r["file_size"]; v != nil {
			sum, found = sum+parseInt(*v), true
		}
	}
	if !found {
		return 0, errNoPosition
	}
	return sum, nil
}

// SQL Server: a varbinary(max) column, marked with an extended property,
// paced on the database's 'Log Bytes Flushed/sec' counter (cumulative).
type msEngine struct {
	table     string
	insertSQL string // for len(args) rows
	args      []any
}

func (*msEngine) measure() string { return "log_bytes_flushed" }

func (e *msEngine) session() engine { return &msEngine{table: e.table} }

func (*msEngine) preflight(context.Context, *dbconn.Conn) error { return nil }

func (e *msEngine) owner(ctx context.Context, c *dbconn.Conn) (bool, bool, error) {
	var exists int
	var marker string
	err := c.Conn.QueryRowContext(ctx, `SELECT CASE WHEN OBJECT_ID(@p1, 'U') IS NULL THEN 0 ELSE 1 END,
  CAST(ISNULL((SELECT value FROM sys.extended_properties WHERE major_id = OBJECT_ID(@p1, 'U') AND minor_id = 0 AND name = N'narrows'), '') AS nvarchar(400))`,
		"dbo."+e.table).Scan(&exists, &marker)
	return exists == 1, marker == Marker, err
}

func (e *msEngine) create(ctx context.Context, c *dbconn.Conn) error {
	return exec(ctx, c,
		fmt.Sprintf(`CREATE TABLE dbo.[%s] (id bigint IDENTITY(1,1) PRIMARY KEY, payload varbinary(max) NOT NULL)`, e.table),
		fmt.Sprintf(`EXEC sys.sp_addextendedproperty @name = N'narrows', @value = N'%s', @level0type = N'SCHEMA', @level0name = N'dbo', @level1type = N'TABLE', @level1name = N'%s'`, Marker, e.table))
}

func (e *msEngine) drop(ctx context.Context, c *dbconn.Conn) error {
	return exec(ctx, c, fmt.Sprintf(`DROP TABLE IF EXISTS dbo.[%s]`, e.table))
}

func (e *msEngine) truncate(ctx context.Context, c *dbconn.Conn) error {
	return exec(ctx, c, fmt.Sprintf(`TRUNCATE TABLE dbo.[%s]`, e.table))
}

// insert builds the multi-row INSERT once per batch size.
func (e *msEngine) insert(ctx context.Context, c *dbconn.Conn, rows [][]byte) error {
	if len(e.args) != len(rows) {
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO dbo.[%s] (payload) VALUES ", e.table)
		for i := range rows {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(@p%d)", i+1)
		}
		e.insertSQL, e.args = b.String(), make([]any, len(rows))
	}
	for i, r := range rows {
		e.args[i] = r
	}
	_, err := c.Conn.ExecContext(ctx, e.insertSQL, e.args...)
	return err
}

func (*msEngine) logBytes(ctx context.Context, c *dbconn.Conn) (int64, error) {
	var v int64
	err := c.Conn.QueryRowContext(ctx, `SELECT cntr_value FROM sys.dm_os_performance_counters
WHERE counter_name = 'Log Bytes Flushed/sec' AND object_name LIKE '%:Databases%' AND RTRIM(instance_name) = DB_NAME()`).Scan(&v)
	return v, err
}
