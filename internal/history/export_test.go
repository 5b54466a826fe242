package history

import (
	"context"
	"fmt"
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
