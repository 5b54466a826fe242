package dbload

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/dbconn"
)

// PostgreSQL: a bytea column stored EXTERNAL (never compressed), rows sent
// as one bytea[] parameter per batch, paced on pg_current_wal_lsn().
type pgEngine struct{}

func (pgEngine) measure() string { return "wal_lsn" }

func (pgEngine) owner(ctx context.Context, c *dbconn.Conn, t string) (bool, string, error) {
	var exists bool
	var marker string
	err := c.Conn.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL, coalesce(obj_description(to_regclass($1), 'pg_class'), '')`, t).Scan(&exists, &marker)
	return exists, marker, err
}

func (pgEngine) create(ctx context.Context, c *dbconn.Conn, t string) error {
	for _, q := range []string{
		fmt.Sprintf(`CREATE TABLE %q (payload bytea NOT NULL)`, t),
		fmt.Sprintf(`ALTER TABLE %q ALTER COLUMN payload SET STORAGE EXTERNAL`, t),
		fmt.Sprintf(`COMMENT ON TABLE %q IS '%s'`, t, Marker),
	} {
		if _, err := c.Conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (pgEngine) drop(ctx context.Context, c *dbconn.Conn, t string) error {
	_, err := c.Conn.ExecContext(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS %q`, t))
	return err
}

func (pgEngine) truncate(ctx context.Context, c *dbconn.Conn, t string) error {
	_, err := c.Conn.ExecContext(ctx, fmt.Sprintf(`TRUNCATE %q`, t))
	return err
}

func (pgEngine) insert(ctx context.Context, c *dbconn.Conn, t string, rows [][]byte) error {
	_, err := c.Conn.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %q (payload) SELECT unnest($1::bytea[])`, t), rows)
	return err
}

func (pgEngine) logBytes(ctx context.Context, c *dbconn.Conn) (int64, error) {
	var s string
	if err := c.Conn.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&s); err != nil {
		return 0, err
	}
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("invalid LSN %q", s)
	}
	return int64(h<<32 | l), nil
}

// MySQL/MariaDB: a LONGBLOB column in InnoDB, one prepared multi-row
// INSERT, paced on the binary log position (falls back to payload bytes
// when the user may not read it).
type myEngine struct {
	stmt     *sql.Stmt
	stmtConn *dbconn.Conn
	stmtRows int
	noPos    bool
	status   string
}

func (e *myEngine) measure() string {
	if e.noPos {
		return "payload"
	}
	return "binlog_position"
}

func (e *myEngine) owner(ctx context.Context, c *dbconn.Conn, t string) (bool, string, error) {
	var comment string
	err := c.Conn.QueryRowContext(ctx, `SELECT table_comment FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`, t).Scan(&comment)
	if err == sql.ErrNoRows {
		return false, "", nil
	}
	return err == nil, comment, err
}

func (e *myEngine) create(ctx context.Context, c *dbconn.Conn, t string) error {
	_, err := c.Conn.ExecContext(ctx, fmt.Sprintf("CREATE TABLE `%s` (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload LONGBLOB NOT NULL) ENGINE=InnoDB COMMENT='%s'", t, Marker))
	if err != nil {
		return err
	}
	if _, err := e.logBytes(ctx, c); err != nil {
		e.noPos = true
	}
	return nil
}

func (e *myEngine) drop(ctx context.Context, c *dbconn.Conn, t string) error {
	if e.stmt != nil {
		e.stmt.Close()
		e.stmt = nil
	}
	_, err := c.Conn.ExecContext(ctx, fmt.Sprintf("DROP TABLE IF EXISTS `%s`", t))
	return err
}

func (e *myEngine) truncate(ctx context.Context, c *dbconn.Conn, t string) error {
	_, err := c.Conn.ExecContext(ctx, fmt.Sprintf("TRUNCATE TABLE `%s`", t))
	return err
}

func (e *myEngine) insert(ctx context.Context, c *dbconn.Conn, t string, rows [][]byte) error {
	if e.stmt == nil || e.stmtConn != c || e.stmtRows != len(rows) {
		if e.stmt != nil {
			e.stmt.Close()
		}
		q := "INSERT INTO `" + t + "` (payload) VALUES " + strings.TrimSuffix(strings.Repeat("(?),", len(rows)), ",")
		st, err := c.Conn.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		e.stmt, e.stmtConn, e.stmtRows = st, c, len(rows)
	}
	args := make([]any, len(rows))
	for i, r := range rows {
		args[i] = r
	}
	_, err := e.stmt.ExecContext(ctx, args...)
	return err
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
type msEngine struct{}

func (msEngine) measure() string { return "log_bytes_flushed" }

func (msEngine) owner(ctx context.Context, c *dbconn.Conn, t string) (bool, string, error) {
	var exists int
	var marker string
	err := c.Conn.QueryRowContext(ctx, `SELECT CASE WHEN OBJECT_ID(@p1, 'U') IS NULL THEN 0 ELSE 1 END,
  CAST(ISNULL((SELECT value FROM sys.extended_properties WHERE major_id = OBJECT_ID(@p1, 'U') AND minor_id = 0 AND name = N'narrows'), '') AS nvarchar(400))`,
		"dbo."+t).Scan(&exists, &marker)
	return exists == 1, marker, err
}

func (msEngine) create(ctx context.Context, c *dbconn.Conn, t string) error {
	for _, q := range []string{
		fmt.Sprintf(`CREATE TABLE dbo.[%s] (id bigint IDENTITY(1,1) PRIMARY KEY, payload varbinary(max) NOT NULL)`, t),
		fmt.Sprintf(`EXEC sys.sp_addextendedproperty @name = N'narrows', @value = N'%s', @level0type = N'SCHEMA', @level0name = N'dbo', @level1type = N'TABLE', @level1name = N'%s'`, Marker, t),
	} {
		if _, err := c.Conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (msEngine) drop(ctx context.Context, c *dbconn.Conn, t string) error {
	_, err := c.Conn.ExecContext(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS dbo.[%s]`, t))
	return err
}

func (msEngine) truncate(ctx context.Context, c *dbconn.Conn, t string) error {
	_, err := c.Conn.ExecContext(ctx, fmt.Sprintf(`TRUNCATE TABLE dbo.[%s]`, t))
	return err
}

func (msEngine) insert(ctx context.Context, c *dbconn.Conn, t string, rows [][]byte) error {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO dbo.[%s] (payload) VALUES ", t)
	args := make([]any, len(rows))
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(@p%d)", i+1)
		args[i] = r
	}
	_, err := c.Conn.ExecContext(ctx, b.String(), args...)
	return err
}

func (msEngine) logBytes(ctx context.Context, c *dbconn.Conn) (int64, error) {
	var v int64
	err := c.Conn.QueryRowContext(ctx, `SELECT cntr_value FROM sys.dm_os_performance_counters
WHERE counter_name = 'Log Bytes Flushed/sec' AND object_name LIKE '%:Databases%' AND RTRIM(instance_name) = DB_NAME()`).Scan(&v)
	return v, err
}
