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

// TestPlanSyncCommitToday: plan sync --dsn measures a commit today on a
// real server (one session, one 1000 B row a commit, in a scratch table it
// drops), --log-path the local flush on a real file; the plan adds what is
// given for the replica to them, and leaves no table behind and no
// password in its output.
func TestPlanSyncCommitToday(t *testing.T) {
	cases := []struct {
		engine, dsn, super, tables string
		need                       func(*testing.T)
		// flushes is whether the server flushes its log at each commit:
		// dbserver's PostgreSQL does (fsync and synchronous_commit on),
		// its MariaDB does not (innodb_flush_log_at_trx_commit=2: once a
		// second), so there a commit holds no flush.
		flushes bool
	}{
		{"postgres", pgDSN(), pgSuper(), "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'narrows%'", needPG, true},
		{"mariadb", mySource(), mySource(), "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'narrows%'", needMaria, false},
	}
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			c.need(t)
			dir := t.TempDir()
			r := itest.Run(t, 2*time.Minute, nil, "plan", "sync", "--dsn", c.dsn, "--log-path", dir, "--stage-duration", "1s", "--disk-size", "16M",
				"--assume", "ack-flush=10ms", "--assume", "ack-write=9ms", "--json")
			noSecrets(t, c.engine, r.Stdout, r.Stderr)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			_, sum := itest.Records(t, r.Stdout)
			p := itest.Obj(sum, "sync_plan")
			parts := itest.Obj(p, "parts")
			now := itest.Obj(parts, "commit_now")
			flush := itest.Obj(parts, "local_flush")
			nowS, flushS := now["seconds"].(float64), flush["seconds"].(float64)
			if nowS <= 0 || flushS <= 0 || now["source"] != "measured" || !strings.Contains(flush["what"].(string), "8 KiB") {
				t.Fatalf("commit today %v, local flush %v", now, flush)
			}
			// The commit today is one session's commits one after another.
			if w := now["what"].(string); !strings.Contains(w, "one after another") {
				t.Errorf("the commit today says %q, want commits one after another", w)
			}
			// The commit today holds the server's own flush, where it
			// flushes at commit: a session cannot commit faster than its
			// log is made durable (the same disk, the same 8 KiB write +
			// fdatasync, nearly). Where it does not, the commit is
			// whatever it is (MariaDB here: 108 µs against a busy
			// disk's 522 µs flush, in a fresh clone's CI run).
			if c.flushes && nowS < flushS/2 {
				t.Errorf("a commit today %.1f µs, under half the local flush %.1f µs", nowS*1e6, flushS*1e6)
			}
			for _, e := range p["engines"].([]any) {
				m := e.(map[string]any)
				var added float64
				switch m["engine"] {
				case "postgres":
					added = 0.010
				case "postgres_remote_write", "mysql":
					added = 0.009
				case "sqlserver":
					added = 0.010 - flushS
				}
				if got := m["predicted_commit_latency_seconds"].(float64); got < nowS+added-1e-9 || got > nowS+added+1e-9 {
					t.Errorf("%s: commit %v s, want today's %v + %v", m["engine"], got, nowS, added)
				}
			}
			if n := count(t, open(t, c.super), c.tables); n != 0 {
				t.Errorf("%v scratch tables left behind", n)
			}
		})
	}
}
