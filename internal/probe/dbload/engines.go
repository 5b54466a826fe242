package dbload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// PostgreSQL: a bytea column stored EXTERNAL (never compressed), rows sent
// as one bytea[] parameter per batch, paced on pg_current_wal_lsn().
type pgEngine struct {
	table, insertSQL string
}

func newPG(t string) *pgEngine {
	return &pgEngine{table: t, insertSQL: fmt.Sprintf(`INSERT INTO %q (payload) SELECT unnest($1::bytea[])`, t)}
}

func (*pgEngine) measure() string { return "wal_lsn" }

func (e *pgEngine) owner(ctx context.Context, c *dbconn.Conn) (bool, string, error) {
	var exists bool
	var marker string
	err := c.Conn.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL, coalesce(obj_description(to_regclass($1), 'pg_class'), '')`, e.table).Scan(&exists, &marker)
	return exists, marker, err
}

func (e *pgEngine) create(ctx context.Context, c *dbconn.Conn) error {
	return exec(ctx, c,
		fmt.Sprintf(`CREATE TABLE %q (payload bytea NOT NULL)`, e.table),
		fmt.Sprintf(`ALTER TABLE %q ALTER COLUMN payload SET STORAGE EXTERNAL`, e.table),
		fmt.Sprintf(`COMMENT ON TABLE %q IS '%s'`, e.table, Marker))
}

func (e *pgEngine) drop(ctx context.Context, c *dbconn.Conn) error {
	return exec(ctx, c, fmt.Sprintf(`DROP TABLE IF EXISTS %q`, e.table))
}

func (e *pgEngine) truncate(ctx context.Context, c *dbconn.Conn) error {
	return exec(ctx, c, fmt.Sprintf(`TRUNCATE %q`, e.table))
}

func (e *pgEngine) insert(ctx context.Context, c *dbconn.Conn, rows [][]byte) error {
	_, err := c.Conn.ExecContext(ctx, e.insertSQL, rows)
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
type myEngine struct {
	table    string
	stmt     *sql.Stmt
	stmtConn *dbconn.Conn
	args     []any // the statement's arguments, one per row
	noPos    bool
}

func (e *myEngine) measure() string {
	if e.noPos {
		return "payload"
	}
	return "binlog_position"
}

func (e *myEngine) owner(ctx context.Context, c *dbconn.Conn) (bool, string, error) {
	var comment string
	err := c.Conn.QueryRowContext(ctx, `SELECT table_comment FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`, e.table).Scan(&comment)
	if err == sql.ErrNoRows {
		return false, "", nil
	}
	return err == nil, comment, err
}

func (e *myEngine) create(ctx context.Context, c *dbconn.Conn) error {
	if err := exec(ctx, c, fmt.Sprintf("CREATE TABLE `%s` (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload LONGBLOB NOT NULL) ENGINE=InnoDB COMMENT='%s'", e.table, Marker)); err != nil {
		return err
	}
	if _, err := e.logBytes(ctx, c); err != nil {
		e.noPos = true
	}
	return nil
}

func (e *myEngine) drop(ctx context.Context, c *dbconn.Conn) error {
	if e.stmt != nil {
		e.stmt.Close()
		e.stmt = nil
	}
	return exec(ctx, c, fmt.Sprintf("DROP TABLE IF EXISTS `%s`", e.table))
}

func (e *myEngine) truncate(ctx context.Context, c *dbconn.Conn) error {
	return exec(ctx, c, fmt.Sprintf("TRUNCATE TABLE `%s`", e.table))
}

// insert prepares the multi-row INSERT once per session and batch size.
func (e *myEngine) insert(ctx context.Context, c *dbconn.Conn, rows [][]byte) error {
	if e.stmt == nil || e.stmtConn != c || len(e.args) != len(rows) {
		if e.stmt != nil {
			e.stmt.Close()
		}
		q := "INSERT INTO `" + e.table + "` (payload) VALUES " + strings.TrimSuffix(strings.Repeat("(?),", len(rows)), ",")
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

func (e *msEngine) owner(ctx context.Context, c *dbconn.Conn) (bool, string, error) {
	var exists int
	var marker string
	err := c.Conn.QueryRowContext(ctx, `SELECT CASE WHEN OBJECT_ID(@p1, 'U') IS NULL THEN 0 ELSE 1 END,
  CAST(ISNULL((SELECT value FROM sys.extended_properties WHERE major_id = OBJECT_ID(@p1, 'U') AND minor_id = 0 AND name = N'narrows'), '') AS nvarchar(400))`,
		"dbo."+e.table).Scan(&exists, &marker)
	return exists == 1, marker, err
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
