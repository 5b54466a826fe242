package dbtest

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/probe/dbload"
)

// count runs a one-number query.
func count(t *testing.T, c *dbconn.Conn, q string, args ...any) int {
	t.Helper()
	var n int
	if err := c.Conn.QueryRowContext(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestLoadMixedCase: a user's table whose name differs from narrows' own
// marked leftover only in case is a different table (PostgreSQL's quoted
// names; MariaDB with lower_case_table_names = 0): db load --table with
// the user's spelling refuses it and leaves it, and its rows, alone.
func TestLoadMixedCase(t *testing.T) {
	cases := []struct {
		engine         string
		dsn            func() string
		need           func(*testing.T)
		user, leftover string
		rows           string
		drop           string
	}{
		{"postgres", pgDSN, needPG,
			`CREATE TABLE "Narrows_Load" (payload bytea); INSERT INTO "Narrows_Load" VALUES ('mine')`,
			`CREATE TABLE narrows_load (payload bytea); COMMENT ON TABLE narrows_load IS '` + dbload.Marker + `'`,
			`SELECT count(*) FROM "Narrows_Load"`, `DROP TABLE IF EXISTS "Narrows_Load"; DROP TABLE IF EXISTS narrows_load`},
		{"mariadb", mySource, needMaria,
			"CREATE TABLE `Narrows_Load` (payload LONGBLOB); INSERT INTO `Narrows_Load` VALUES ('mine')",
			"CREATE TABLE narrows_load (payload LONGBLOB) COMMENT='" + dbload.Marker + "'",
			"SELECT count(*) FROM `Narrows_Load`", "DROP TABLE IF EXISTS `Narrows_Load`; DROP TABLE IF EXISTS narrows_load"},
	}
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			c.need(t)
			if c.engine == "mariadb" {
				var lctn int
				if err := open(t, c.dsn()).Conn.QueryRowContext(context.Background(), "SELECT @@lower_case_table_names").Scan(&lctn); err != nil || lctn != 0 {
					t.Skipf("lower_case_table_names = %d (%v): names differing in case are one table here", lctn, err)
				}
			}
			me := open(t, c.dsn())
			for _, q := range strings.Split(c.drop+"; "+c.user+"; "+c.leftover, "; ") {
				exec1(t, me, q)
			}
			t.Cleanup(func() {
				for _, q := range strings.Split(c.drop, "; ") {
					exec1(t, me, q)
				}
			})
			r := itest.Run(t, 60*time.Second, nil, "db", "load", "--dsn", c.dsn(), "--rate", "1MB/s", "--duration", "1s", "--table", "Narrows_Load")
			noSecrets(t, c.engine, r.Stdout, r.Stderr)
			if r.Code != 2 || !strings.Contains(r.Stderr, "is not narrows' own scratch table") {
				t.Errorf("exit %d, stderr %q: want exit 2 and a refusal", r.Code, r.Stderr)
			}
			if n := count(t, me, c.rows); n != 1 {
				t.Fatalf("the user's table holds %d rows, want its own 1", n)
			}
		})
	}
}

// TestLoadSwappedTable: a table put in place of narrows' own mid-run (the
// scratch table renamed away, another created under its name) receives
// none of narrows' rows and is not dropped; the run stops and says why.
func TestLoadSwappedTable(t *testing.T) {
	cases := []struct {
		engine string
		dsn    func() string
		need   func(*testing.T)
		exists string
		swap   []string
	}{
		{"postgres", pgDSN, needPG, "SELECT count(*) FROM pg_class WHERE relname = 'narrows_swap'",
			[]string{"ALTER TABLE narrows_swap RENAME TO narrows_swap_orig", "CREATE TABLE narrows_swap (payload bytea NOT NULL)", "INSERT INTO narrows_swap VALUES ('mine')"}},
		// MariaDB commits DDL at once: the swap is three statements, and
		// the INSERT between them finds no table (an error, not a swap).
		{"mariadb", mySource, needMaria, "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'narrows_swap'",
			[]string{"CREATE TABLE narrows_swap_new (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload LONGBLOB NOT NULL)", "INSERT INTO narrows_swap_new (payload) VALUES ('mine')",
				"RENAME TABLE narrows_swap TO narrows_swap_orig, narrows_swap_new TO narrows_swap"}},
	}
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			c.need(t)
			me := open(t, c.dsn())
			clean := func() {
				for _, tb := range []string{"narrows_swap", "narrows_swap_orig", "narrows_swap_new"} {
					exec1(t, me, "DROP TABLE IF EXISTS "+tb)
				}
			}
			clean()
			t.Cleanup(clean)
			// Two sessions: each one's INSERTs carry the guard.
			p := itest.Start(t, nil, "db", "load", "--dsn", c.dsn(), "--rate", "1MB/s", "--duration", "8s", "--interval", "200ms", "--table", "narrows_swap", "--sessions", "2")
			for i := 0; count(t, me, c.exists) == 0; i++ {
				if i > 100 {
					t.Fatalf("narrows did not create its table; stderr %q", p.Err.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			// The same account, as an application sharing narrows' would.
			tx, err := me.Conn.BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range c.swap {
				if _, err := tx.Exec(q); err != nil {
					tx.Rollback()
					t.Fatalf("%s: %v", q, err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			code := p.Wait(t, 40*time.Second)
			noSecrets(t, "swap", p.Out.String(), p.Err.String())
			if n := count(t, me, c.exists); n != 1 {
				t.Fatalf("the table swapped in was dropped (exit %d, stderr %q)", code, p.Err.String())
			}
			if n := count(t, me, "SELECT count(*) FROM narrows_swap"); n != 1 {
				t.Fatalf("the table swapped in holds %d rows, want its own 1", n)
			}
			if code != 2 || !strings.Contains(p.Err.String(), "replaced mid-run") {
				t.Fatalf("exit %d, stderr %q: want exit 2 saying the table was replaced", code, p.Err.String())
			}
			t.Log(strings.TrimSpace(p.Err.String()))
		})
	}
}

// TestLoadSyncStandbyDown: with every commit waiting for a synchronous
// standby that is not there, db load says so (naming
// synchronous_standby_names) in one line, exit 2, and leaves no table.
func TestLoadSyncStandbyDown(t *testing.T) {
	needPG(t)
	ctx := context.Background()
	super := open(t, pgSuper())
	exec1(t, super, "DROP TABLE IF EXISTS narrows_sync")
	t.Cleanup(func() {
		// Whatever the run left, committed locally, is removed once the
		// setting is reset (cleanups run last first).
		if _, err := super.Conn.ExecContext(ctx, "DROP TABLE IF EXISTS narrows_sync"); err != nil {
			t.Error(err)
		}
	})
	pgSystemSet(t, super, "synchronous_standby_names", "'nosuchstandby'")
	r := itest.Run(t, 60*time.Second, nil, "db", "load", "--dsn", pgDSN(), "--rate", "1MB/s", "--duration", "2s", "--timeout", "2s", "--table", "narrows_sync")
	noSecrets(t, "sync", r.Stdout, r.Stderr)
	line := strings.TrimSuffix(r.Stderr, "\n")
	if r.Code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, "synchronous_standby_names") {
		t.Errorf("exit %d, stderr %q: want exit 2 and one line naming synchronous_standby_names", r.Code, r.Stderr)
	}
	t.Log(line)
	var left int
	var marker string
	if err := super.Conn.QueryRowContext(ctx, "SELECT count(*), coalesce(max(obj_description(oid, 'pg_class')), '') FROM pg_class WHERE relname = 'narrows_sync'").Scan(&left, &marker); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("a table was left behind (marker %q)", marker)
	}
}

// TestLoadReadOnlyMariaDB: a MariaDB server that is read-only, as a
// replica is (read_only = ON), or whose sessions are (tx_read_only = ON),
// is refused before anything is created, in one line, exit 2; one made
// read-only mid-run stops the load with the same kind of line and exit 2
// (it was "Cannot execute statement in a READ ONLY transaction (error
// 1792)" and the driver's text for --read-only, exit 1). The replica
// stands in: its own tables are its own (narrows' database is
// replicated, the scratch table is not).
func TestLoadReadOnlyMariaDB(t *testing.T) {
	needMaria(t)
	ctx := context.Background()
	admin := func(sql string) {
		t.Helper()
		if _, err := maria.SQL(ctx, maria.Replica, sql); err != nil {
			t.Fatal(err)
		}
	}
	tables := func() int {
		out, err := maria.SQL(ctx, maria.Replica, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'narrows' AND table_name = 'narrows_ro'")
		if err != nil {
			t.Fatal(err)
		}
		return int(parseCount(t, out))
	}
	t.Cleanup(func() {
		admin("SET GLOBAL read_only = OFF")
		admin("SET GLOBAL tx_read_only = OFF")
		admin("DROP TABLE IF EXISTS narrows.narrows_ro")
	})
	for _, c := range []struct{ name, set, want string }{
		{"read_only", "SET GLOBAL read_only = ON", "this server is read-only (read_only = ON)"},
		{"tx_read_only", "SET GLOBAL tx_read_only = ON", "this session is read-only (tx_read_only = ON)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			admin(c.set)
			defer admin("SET GLOBAL read_only = OFF")
			defer admin("SET GLOBAL tx_read_only = OFF")
			r := itest.Run(t, 60*time.Second, nil, "db", "load", "--dsn", myReplica(), "--rate", "1MB/s", "--duration", "2s", "--table", "narrows_ro")
			noSecrets(t, c.name, r.Stdout, r.Stderr)
			line := strings.TrimSuffix(r.Stderr, "\n")
			if r.Code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, c.want) {
				t.Fatalf("exit %d, stderr %q: want exit 2 and one line containing %q", r.Code, r.Stderr, c.want)
			}
			if n := tables(); n != 0 {
				t.Fatalf("%d scratch tables created on a read-only server", n)
			}
			t.Log(line)
		})
	}
	t.Run("mid-run", func(t *testing.T) {
		p := itest.Start(t, nil, "db", "load", "--dsn", myReplica(), "--rate", "1MB/s", "--duration", "20s", "--interval", "200ms", "--table", "narrows_ro")
		for i := 0; tables() == 0; i++ {
			if i > 100 {
				t.Fatalf("narrows did not create its table; stderr %q", p.Err.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		admin("SET GLOBAL read_only = ON")
		code := p.Wait(t, 40*time.Second)
		admin("SET GLOBAL read_only = OFF")
		noSecrets(t, "mid-run", p.Out.String(), p.Err.String())
		line := strings.TrimSuffix(p.Err.String(), "\n")
		if code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, "the server is read-only") {
			t.Fatalf("exit %d, stderr %q: want exit 2 and one line saying the server is read-only", code, p.Err.String())
		}
		// The table could not be dropped on a read-only server: the
		// summary says so rather than claim it was.
		if !strings.Contains(p.Out.String(), "NOT dropped") {
			t.Fatalf("the summary does not say the table was left:\n%s", p.Out.String())
		}
		t.Log(line)
	})
}

func parseCount(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatalf("not a count: %q", s)
	}
	return n
}

// TestLoadSessions: --sessions 3 runs three sessions, each its own
// connection and commits, sharing the rate and one table (narrows' own,
// dropped at the end); the summary gives each session's figures and the
// whole, the whole is the sum, and every commit is the INSERT of the rows
// the output names (at 3 MB/s shared by three, 20 rows of 1000 B: about
// 50 commits a second per session).
func TestLoadSessions(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		engine   string
		dsn      func() string
		need     func(*testing.T)
		sessions func() int // narrows' sessions on the server now
		tables   func() int
	}{
		{"postgres", pgDSN, needPG, func() int {
			return count(t, open(t, pgSuper()), "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'narrows' AND usename = 'narrows' AND backend_type = 'client backend'")
		}, func() int {
			return count(t, open(t, pgSuper()), "SELECT count(*) FROM pg_class WHERE relname = 'narrows_sessions'")
		}},
		{"mariadb", mySource, needMaria, func() int {
			out, err := maria.SQL(ctx, maria.Source, "SELECT count(*) FROM information_schema.processlist WHERE user = 'narrows'")
			if err != nil {
				t.Fatal(err)
			}
			return int(parseCount(t, out))
		}, func() int {
			out, err := maria.SQL(ctx, maria.Source, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'narrows_sessions'")
			if err != nil {
				t.Fatal(err)
			}
			return int(parseCount(t, out))
		}},
	}
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			c.need(t)
			p := itest.Start(t, nil, "db", "load", "--dsn", c.dsn(), "--rate", "3MB/s", "--duration", "4s", "--interval", "500ms", "--sessions", "3", "--table", "narrows_sessions", "--json")
			most := 0
			for i := 0; i < 30 && most < 3; i++ {
				most = max(most, c.sessions())
				time.Sleep(100 * time.Millisecond)
			}
			if code := p.Wait(t, 60*time.Second); code != 0 {
				t.Fatalf("exit %d: %s", code, p.Err.String())
			}
			noSecrets(t, c.engine, p.Out.String(), p.Err.String())
			if most < 3 {
				t.Fatalf("at most %d of narrows' sessions seen on the server, want 3", most)
			}
			_, sum := itest.Records(t, p.Out.String())
			l := itest.Obj(sum, "db_load")
			ss, _ := l["sessions"].([]any)
			rows, _ := itest.Num(l, "rows")
			commits, _ := itest.Num(l, "commits")
			perCommit, _ := itest.Num(l, "rows_per_commit")
			commitBytes, _ := itest.Num(l, "commit_payload_bytes")
			if len(ss) != 3 || perCommit != 20 || commitBytes != 20_000 || rows != commits*perCommit || l["table_dropped"] != true {
				t.Fatalf("db load: %d sessions, %v rows in %v commits of %v rows (%v B): %v", len(ss), rows, commits, perCommit, commitBytes, l)
			}
			var sumRows, sumCommits float64
			for i, s := range ss {
				m := s.(map[string]any)
				r, _ := itest.Num(m, "rows")
				n, _ := itest.Num(m, "commits")
				if id, _ := itest.Num(m, "session"); int(id) != i+1 || n < 10 || r != n*perCommit || m["commit_latency"] == nil {
					t.Fatalf("session %d: %v", i+1, m)
				}
				sumRows, sumCommits = sumRows+r, sumCommits+n
			}
			if sumRows != rows || sumCommits != commits {
				t.Fatalf("the sessions add up to %v rows in %v commits, the whole says %v in %v", sumRows, sumCommits, rows, commits)
			}
			if n := c.tables(); n != 0 {
				t.Fatalf("%d scratch tables left", n)
			}
			t.Logf("3 sessions: %v commits of %v rows, log %v B/s", commits, perCommit, l["log_bytes_per_second"])
		})
	}
}

// TestLoadIntervals: a run of 5 s at 1 s intervals has 5 interval rows,
// the last ending at 5 s (db load had 4: the last second was never
// reported), for db load and db ping alike; and db load's summary gives
// the log in the decimal unit of its rate (it said "119 MiB in 25.0 s =
// 5.00 MB/s").
func TestLoadIntervals(t *testing.T) {
	needPG(t)
	for _, args := range [][]string{
		{"db", "load", "--dsn", pgDSN(), "--rate", "1MB/s", "--duration", "5s", "--interval", "1s", "--table", "narrows_intervals", "--json"},
		{"db", "ping", "--dsn", pgDSN(), "--duration", "5s", "--interval", "1s", "--json"},
	} {
		r := itest.Run(t, 60*time.Second, nil, args...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args[:2], r.Code, r.Stderr)
		}
		ivs, _ := itest.Records(t, r.Stdout)
		// The intervals tile the run: each starts where the one before
		// ended, the first at 0, the last at its end. An interval ends
		// when the first query or commit after its second ends, so one
		// that ran across a boundary (on a busy machine, in a fresh
		// clone's CI run, db ping gave 3 records in 5 s) spans two
		// seconds or more, and there are that many fewer.
		var at float64
		merged := 0
		for i, iv := range ivs {
			start, _ := itest.Num(iv, "start_seconds")
			end, _ := itest.Num(iv, "end_seconds")
			if math.Abs(start-at) > 0.001 || end <= start {
				t.Fatalf("%v: interval %d runs %.3f–%.3f s, after one that ended at %.3f s", args[:2], i+1, start, end, at)
			}
			merged += int(math.Round(end-start)) - 1
			at = end
		}
		if len(ivs)+merged != 5 {
			t.Fatalf("%v: %d interval records in 5 s at 1 s (%d seconds merged into others), want 5", args[:2], len(ivs), merged)
		}
		if merged > 0 {
			t.Logf("%v: %d of the 5 seconds were merged into others: a query ran across their boundaries", args[:2], merged)
		}
		if math.Abs(at-5) > 0.1 {
			t.Fatalf("%v: the last interval ends at %.2f s, want 5", args[:2], at)
		}
	}
	r := itest.Run(t, 60*time.Second, nil, "db", "load", "--dsn", pgDSN(), "--rate", "1MB/s", "--duration", "2s", "--table", "narrows_intervals")
	line := regexp.MustCompile(`(?m)^log +\S+ (\S+) in \S+ s = \S+ (\S+)/s`).FindStringSubmatch(r.Stdout)
	decimal := regexp.MustCompile(`^[kMGT]?B$`)
	if r.Code != 0 || line == nil || !decimal.MatchString(line[1]) || !decimal.MatchString(line[2]) {
		t.Fatalf("the log line mixes units (%q):\n%s", line, r.Stdout)
	}
	t.Log(line[0])
}
