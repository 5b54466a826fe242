package dbconn

import (
	"context"
	"database/sql"
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

// Backoff is how long to wait before reconnect attempt n (0-based): first,
// doubling, at most most.
func Backoff(n int, first, most time.Duration) time.Duration {
	return min(first<<min(n, 5), most)
}
