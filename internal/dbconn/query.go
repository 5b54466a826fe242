package dbconn

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// QueryMaps runs q and returns each row as lower-cased column name → value
// (nil for NULL), so that engines' and versions' differently spelled
// columns can be looked up by name.
func QueryMaps(ctx context.Context, c *sql.Conn, q string) ([]map[string]*string, error) {
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]*string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		m := make(map[string]*string, len(cols))
		for i, c := range cols {
			m[strings.ToLower(c)] = nil
			if vals[i].Valid {
				v := vals[i].String
				m[strings.ToLower(c)] = &v
			}
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ParseLSN reads a PostgreSQL LSN ("16/B374D848") as a byte position.
func ParseLSN(s string) (int64, error) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("invalid LSN %q", s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("invalid LSN %q", s)
	}
	return int64(h<<32 | l), nil
}

// Backoff is how long to wait before reconnect attempt n (0-based): first,
// doubling, at most most.
func Backoff(n int, first, most time.Duration) time.Duration {
	return min(first<<min(n, 5), most)
}

// Reopen opens a new session to d after one was lost, waiting
// Backoff(n, first, most) before attempt n, until one succeeds or stop
// (asked before each wait and after it) says to give up. It returns the
// session (nil when it gave up), how many attempts failed, and the last
// failure.
func Reopen(ctx context.Context, d *DSN, opt Options, first, most time.Duration, stop func() bool) (c *Conn, failed int, last error) {
	for attempt := 0; !stop(); attempt++ {
		select {
		case <-ctx.Done():
		case <-time.After(Backoff(attempt, first, most)):
		}
		if ctx.Err() != nil || stop() {
			break
		}
		c, err := Open(ctx, d, opt)
		if err == nil {
			return c, failed, last
		}
		failed, last = failed+1, err
	}
	return nil, failed, last
}
