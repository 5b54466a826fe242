package history

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
)

// SetVersionForTest stamps a store with another schema version.
func SetVersionForTest(s *Store, v int) {
	s.db.ExecContext(context.Background(), fmt.Sprintf("PRAGMA user_version = %d", v))
}

// SetMaxRecordForTest lowers MaxRecordBytes, so a test need not write
// 64 MiB to pass it, and gives a func that restores it.
func SetMaxRecordForTest(n int64) (restore func()) {
	old := maxRecord
	maxRecord = n
	return func() { maxRecord = old }
}

// DSNForTest is the name Open gives the driver for the store file path:
// its pragmas and its BEGIN IMMEDIATE.
func DSNForTest(path string) string { return dsn(path) }

// v1Schema is the store's layout before run_file (narrows before issue 27).
const v1Schema = `
CREATE TABLE runs (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	started_at      TEXT NOT NULL,
	command         TEXT NOT NULL,
	target          TEXT NOT NULL,
	headline_name   TEXT NOT NULL,
	headline        REAL,
	headline_unit   TEXT NOT NULL,
	partial         INTEGER NOT NULL,
	narrows_version TEXT NOT NULL,
	summary         BLOB NOT NULL,
	intervals       BLOB NOT NULL,
	intervals_kept    INTEGER NOT NULL,
	intervals_dropped INTEGER NOT NULL
);
CREATE INDEX runs_command ON runs (command, id);
`

// MakeV1StoreForTest writes, in dir, a store as narrows of schema 1
// wrote it, holding one run of the summary and intervals given (JSON).
func MakeV1StoreForTest(ctx context.Context, dir string, summary, intervals []byte) error {
	db, err := sql.Open(driverName, dsn(filepath.Join(dir, FileName)))
	if err != nil {
		return err
	}
	defer db.Close()
	sum, err := compress(summary)
	if err != nil {
		return err
	}
	ivb, err := compress(intervals)
	if err != nil {
		return err
	}
	for _, q := range []string{"PRAGMA journal_mode=WAL", v1Schema, "PRAGMA user_version = 1"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, `INSERT INTO runs (started_at, command, target, headline_name, headline, headline_unit,
		partial, narrows_version, summary, intervals, intervals_kept, intervals_dropped) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
		"2026-01-02T03:04:05Z", "net stream", "127.0.0.1:7447", "throughput", 1e6, "bit/s", false, "1.0", sum, ivb, 0, 0)
	return err
}
