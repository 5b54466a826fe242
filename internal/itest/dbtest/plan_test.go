package dbtest

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// TestPlanSizeFromServer: plan backup --dsn plans the size the server
// reports (PostgreSQL: every database of the cluster; MariaDB: every
// table), says how it was counted, and never shows the password.
func TestPlanSizeFromServer(t *testing.T) {
	cases := []struct {
		engine, dsn, super, truth, note string
		need                            func(*testing.T)
	}{
		{"postgres", pgDSN(), pgSuper(), "SELECT sum(pg_database_size(oid))::bigint + (SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size') FROM pg_database", "every database of the cluster (pg_database_size)", needPG},
		{"mariadb", mySource(), mySource(), "SELECT CAST(SUM(data_length + index_length) AS SIGNED) FROM information_schema.tables WHERE table_type = 'BASE TABLE'", "data and indexes of every table", needMaria},
	}
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			c.need(t)
			r := itest.Run(t, time.Minute, nil, "plan", "backup", "--dsn", c.dsn, "--assume", "network=1Gbit/s", "--compression", "none", "--json")
			noSecrets(t, c.engine, r.Stdout, r.Stderr)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			_, sum := itest.Records(t, r.Stdout)
			plan := itest.Obj(sum, "backup_plan")
			cells := plan["cells"].([]any)
			if len(cells) != 1 {
				t.Fatalf("%d cells, want the server's size alone: %v", len(cells), cells)
			}
			got := int64(cells[0].(map[string]any)["size_bytes"].(float64))
			// Read again a moment later: autovacuum may add a page or a
			// visibility map meanwhile, never megabytes on an idle server.
			truth := int64(count(t, open(t, c.super), c.truth))
			if got < truth-1<<20 || got > truth+1<<20 {
				t.Fatalf("planned %d bytes, the server counts %d", got, truth)
			}
			notes := ""
			for _, n := range plan["notes"].([]any) {
				notes += n.(string) + " "
			}
			if !strings.Contains(notes, c.note) {
				t.Fatalf("notes %q do not say how the size was counted (%q)", notes, c.note)
			}
		})
	}
}
