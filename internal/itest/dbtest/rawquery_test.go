package dbtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
)

// TestRawQuery: a session taken over for the engine's own protocol
// (narrows host --dsn's) answers one query after another on the real
// servers, over TLS too for PostgreSQL; a query the server refuses is an
// error named by its code alone; and the session is gone from the server
// after Close.
func TestRawQuery(t *testing.T) {
	for _, tc := range []struct {
		name, dsn, bad string
		need           func(*testing.T)
		sessions       func(context.Context) (string, error)
	}{
		{"postgres", pgDSN(), "SQLSTATE 42601", needPG, func(ctx context.Context) (string, error) {
			return pg.Psql(ctx, pg.Primary, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'narrows'")
		}},
		{"postgres over TLS", strings.Replace(pgDSN(), "sslmode=disable", "sslmode=require", 1), "SQLSTATE 42601", needPG, nil},
		{"mariadb", mySource(), "error 1064", needMaria, func(ctx context.Context) (string, error) {
			return maria.SQL(ctx, maria.Source, "SELECT count(*) FROM information_schema.processlist WHERE user = 'narrows'")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.need(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			d, err := dbconn.Parse(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"SELECT 1", "SELEC 1"} {
				conn, err := dbconn.Open(ctx, d, dbconn.Options{Timeout: 10 * time.Second, Blocking: true})
				if err != nil {
					t.Fatal(err)
				}
				raw, err := conn.Raw(q)
				if err != nil {
					conn.Close()
					t.Fatal(err)
				}
				raw.Sock.SetDeadline(time.Now().Add(30 * time.Second))
				var buf dbconn.RawBuffer
				n := 0
				for ; n < 500; n++ {
					if err = raw.Do(&buf); err != nil {
						break
					}
				}
				raw.Close()
				conn.Close()
				switch {
				case q == "SELECT 1" && (err != nil || n != 500):
					t.Fatalf("%s: %d queries answered, then %v", q, n, err)
				case q != "SELECT 1" && (err == nil || !strings.Contains(err.Error(), tc.bad) || n != 0):
					t.Fatalf("%s: %d answered, then %v: want the server's refusal named %q", q, n, err, tc.bad)
				}
			}
			if tc.sessions == nil {
				return
			}
			// The server ends a session whose client said goodbye at
			// once; give it a moment.
			var left string
			for range 50 {
				if left, err = tc.sessions(ctx); err == nil && strings.TrimSpace(left) == "0" {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Fatalf("narrows' sessions still on the server after Close: %q (%v)", left, err)
		})
	}
}
