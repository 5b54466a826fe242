// Package dbsize reads how many bytes a backup of the database behind a
// DSN copies, from the server's own accounting, for `narrows plan
// backup --dsn`. It only reads.
package dbsize

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
)

// Size is what a backup of the database copies, and how it was counted.
type Size struct {
	Bytes int64
	What  string
}

// Read opens a session and reads the size: on PostgreSQL the whole
// cluster (a physical backup, pg_basebackup or pgBackRest, copies every
// database), on MySQL/MariaDB the tables of every schema, on SQL Server
// the DSN's database files.
func Read(ctx context.Context, d *dbconn.DSN) (Size, error) {
	c, err := dbconn.Open(ctx, d, dbconn.Options{})
	if err != nil {
		return Size{}, err
	}
	defer c.Close()
	switch d.Engine {
	case dbconn.Postgres:
		return postgres(ctx, c.Conn)
	case dbconn.MySQL:
		var n sql.NullInt64
		err := c.Conn.QueryRowContext(ctx, `SELECT CAST(SUM(data_length + index_length) AS SIGNED) FROM information_schema.tables WHERE table_type = 'BASE TABLE'`).Scan(&n)
		if err != nil {
			return Size{}, dbconn.Classify(d, "read the database size", err)
		}
		return Size{Bytes: n.Int64, What: "data and indexes of every table (information_schema.tables) " + metric.FormatDecimalBytes(n.Int64)}, nil
	default:
		var n int64
		err := c.Conn.QueryRowContext(ctx, `SELECT CAST(SUM(CAST(size AS bigint)) * 8192 AS bigint) FROM sys.database_files`).Scan(&n)
		if err != nil {
			return Size{}, dbconn.Classify(d, "read the database size", err)
		}
		return Size{Bytes: n, What: "the database's data and log files (sys.database_files) " + metric.FormatDecimalBytes(n)}, nil
	}
}

func postgres(ctx context.Context, c *sql.Conn) (Size, error) {
	var dbs int64
	if err := c.QueryRowContext(ctx, `SELECT sum(pg_database_size(oid))::bigint FROM pg_database`).Scan(&dbs); err != nil {
		return Size{}, fmt.Errorf("read the cluster's size (pg_database_size): %w", err)
	}
	// pg_wal is not counted: a physical backup copies only the WAL from
	// its own start (pg_basebackup -X, pgBackRest's archive), not the
	// segments the server keeps for itself; that is at least the segment
	// its checkpoint is in (16 MiB by default), and more on a busy server.
	var seg int64
	if err := c.QueryRowContext(ctx, `SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size'`).Scan(&seg); err != nil || seg <= 0 {
		seg = 16 << 20
	}
	return Size{Bytes: dbs + seg, What: "every database of the cluster (pg_database_size) " + metric.FormatDecimalBytes(dbs) +
		" and the one WAL segment a backup carries at least (" + metric.FormatBytes(seg) + "; more if the server writes while it runs)"}, nil
}
