//go:build linux

package experiments

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
	"github.com/narrows/narrows/internal/testenv"
)

// Experiment "plan chatty" (issue 14, item 4): a chatty report's time
// predicted across one line from a measurement across another. On each of
// two lines (1 ms and 30 ms RTT) a PostgreSQL primary runs on host A and
// the application, narrows and pgbench, on host B: `narrows plan chatty
// --dsn … --rtt OTHER` measures db ping across this line and predicts N
// queries across the other; the truth is pgbench sending the same N
// SELECT 1 one after another in one session (-c 1 -M simple) across that
// line, a typical run's (its median query × N, as the plan's figures are
// a typical run's, from db ping's median; the mean's excess is a note of
// the plan's own), and narrows' own db ping --count N beside it.

// chattySide is one line's figures.
type chattySide struct {
	rtt time.Duration
	// The plan made here for the other line: its total, and the totals at
	// the ends of the network's bounds.
	predicted, low, high float64
	// What the plan read now here (N × db ping's median) and the
	// network's round trip it took from db ping.
	now, network float64
	// The truth here: pgbench's N queries, typical (its median query ×
	// N) and whole (their sum), each the lesser of two runs; and db ping
	// --count N (its measured time).
	pgbenchTypical, pgbench, ping float64
	// On the shorter line, pgbench's queries paced one every longer
	// round trip (its median × N): the truth at the other line's idle.
	paced float64
	line  string
}

// pacedQueries is how many paced queries pgbench sends: 100 across 30 ms
// are 3 s.
const pacedQueries = 100

// chattyPrimary starts a PostgreSQL primary on host A (its standby on A
// too: the plan needs no replication, and its base backup stays off the
// line).
func chattyPrimary(t *testing.T, l *testbed.DelayLine) *dbserver.Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := dbserver.StartPostgresOn(ctx, dbserver.PostgresOptions{Primary: placeOn(l.A), Standby: placeOn(l.A)})
	if err != nil {
		testenv.Need(t, testenv.DB, "PostgreSQL could not start on the testbed: %v", err)
	}
	t.Cleanup(pg.Close)
	return pg
}

// pgbenchQueries runs n SELECT 1 in one session from host B, one after
// another (-c 1, the simple protocol as db ping sends it), and returns
// each query's latency (seconds), from pgbench's per-transaction log (-l),
// the connection excluded. With every > 0 the queries are paced, one
// every that long on average (pgbench -R, Poisson-spaced): each then
// starts after the idle a longer line's round trip leaves, and its
// schedule's lag is taken out.
func pgbenchQueries(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, n int, every time.Duration) []float64 {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	args := []string{"-l", "--log-prefix=" + filepath.Join(dir, "q")}
	if every > 0 {
		args = append(args, "-R", strconv.FormatFloat(float64(time.Second)/float64(every), 'f', 3, 64))
	}
	pgbenchRun(t, l, pg, n, args...)
	lat := pgbenchLatencies(t, filepath.Join(dir, "q"))
	if len(lat) != n {
		t.Fatalf("pgbench's log in %s holds %d transactions, want %d", dir, len(lat), n)
	}
	return lat
}

// pgbenchTwice runs pgbenchQueries twice, back to back, and returns the
// lesser of the two runs' whole time (the sum of their queries) and of
// their typical time (the median query × n): other work on the machine
// only slows a run.
func pgbenchTwice(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, n int) (whole, typical float64) {
	t.Helper()
	whole, typical = math.Inf(1), math.Inf(1)
	for range 2 {
		q := pgbenchQueries(t, l, pg, n, 0)
		var sum float64
		for _, v := range q {
			sum += v
		}
		whole, typical = min(whole, sum), min(typical, metric.Median(q)*float64(n))
	}
	return whole, typical
}

// pgbenchPaced is pgbench's typical time for n queries paced one every
// every: the median of two runs' pacedQueries together, × n: the truth
// at that idle. A paced query wakes from its idle into whatever else
// runs, and one run of 100 can catch it (a fresh clone's CI read one at
// 1.71 ms a query across 1 ms where pgbench's rest across the 30 ms
// line, kept whole, made 1.43); the median of both holds a run half
// disturbed, where the lesser of two medians read low on a quiet machine.
func pgbenchPaced(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, n int, every time.Duration) float64 {
	t.Helper()
	q := append(pgbenchQueries(t, l, pg, pacedQueries, every), pgbenchQueries(t, l, pg, pacedQueries, every)...)
	return metric.Median(q) * float64(n)
}

// pgbenchLatencies reads the one per-transaction log pgbench -l
// --log-prefix prefix wrote (prefix.PID): each transaction's latency,
// seconds, from when it started (under -R pgbench counts from when it was
// scheduled, and logs the lag).
func pgbenchLatencies(t *testing.T, prefix string) []float64 {
	t.Helper()
	logs, _ := filepath.Glob(prefix + ".*")
	if len(logs) != 1 {
		t.Fatalf("pgbench wrote %d transaction logs as %s.*, want 1", len(logs), prefix)
	}
	raw, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	// Each line: client_id transaction_no time_us script_no epoch us
	// [schedule_lag_us [retries]].
	var lat []float64
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("pgbench log %s: line %q", logs[0], line)
		}
		us, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			t.Fatalf("pgbench log %s: line %q", logs[0], line)
		}
		if len(f) >= 7 {
			lag, err := strconv.ParseFloat(f[6], 64)
			if err != nil {
				t.Fatalf("pgbench log %s: line %q", logs[0], line)
			}
			us -= lag
		}
		lat = append(lat, us/1e6)
	}
	return lat
}

// pgbenchRun runs pgbench's n SELECT 1 (-c 1 -M simple) from host B
// against pg's primary on host A, with extra arguments, and returns what
// it printed.
func pgbenchRun(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, n int, extra ...string) []byte {
	t.Helper()
	script := filepath.Join(t.TempDir(), "select1.sql")
	if err := os.WriteFile(script, []byte("SELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(script), 0o755)
	args := append(inNS(l.B)[1:], filepath.Join(pg.Bin, "pgbench"), "-n", "-c", "1", "-t", strconv.Itoa(n), "-M", "simple", "-f", script,
		"-h", pg.Primary.Addr, "-p", strconv.Itoa(pg.Primary.Port), "-U", "narrows")
	args = append(append(args, extra...), "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, inNS(l.B)[0], args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+dbserver.NarrowsPassword, "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	return out
}

// measureChattySide sets up a line of rtt with PostgreSQL on A, plans
// across other from B, and runs the truth on this line.
func measureChattySide(t *testing.T, rtt, other time.Duration, n int, planFor string) chattySide {
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: 100e6})
	pg := chattyPrimary(t, l)
	dsn := pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword)
	runOnB := func(timeout time.Duration, args ...string) itest.Result {
		t.Helper()
		res := itest.RunWrapped(t, timeout, nil, inNS(l.B), args...)
		if res.Code != 0 {
			t.Fatalf("narrows %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
		}
		return res
	}
	s := chattySide{rtt: rtt}
	before := l.Stats()
	res := runOnB(time.Minute, "plan", "chatty", "--dsn", dsn, "--queries", strconv.Itoa(n), "--rtt", other.String(), "--duration", planFor, "--json")
	_, sum := itest.Records(t, res.Stdout)
	plan := itest.Obj(sum, "chatty_plan")
	s.network = jnum(itest.Obj(plan, "figures"), "network_rtt_seconds")
	t.Logf("plan chatty across %v: figures %v", rtt, plan["figures"])
	for _, c := range plan["cases"].([]any) {
		m := c.(map[string]any)
		switch m["case"] {
		case "now":
			s.now = jnum(m, "total_seconds")
		case "rtt":
			s.predicted, s.low, s.high = jnum(m, "total_seconds"), jnum(m, "total_low_seconds"), jnum(m, "total_high_seconds")
		}
	}
	if s.predicted <= 0 || s.now <= 0 {
		t.Fatalf("plan chatty: no prediction: %v", plan)
	}
	// The faster of two: other work on the machine only slows a run.
	s.pgbench, s.pgbenchTypical = pgbenchTwice(t, l, pg, n)
	if other > rtt {
		// The same queries, each after the idle the other line's round
		// trip leaves: what the plan made there read its rest at.
		s.paced = pgbenchPaced(t, l, pg, n, other)
	}
	res = runOnB(time.Minute, "db", "ping", "--dsn", dsn, "--count", strconv.Itoa(n), "--json")
	_, sum = itest.Records(t, res.Stdout)
	s.ping = jnum(itest.Obj(sum, "db_ping"), "duration_seconds")
	s.line = lineRecord(before, l.Stats())
	return s
}

// TestPlanChattyAcrossRTT: measured across 1 ms, plan chatty --rtt 30ms
// predicts N queries across 30 ms within 15% of pgbench's typical time
// there. Measured across 30 ms, --rtt 1ms gives a range for the 1 ms
// line, and pgbench's typical time there must lie in it (its whole run
// is logged beside: with both CPUs half busy in 5 ms bursts, 300 queries
// across 1 ms took 0.450 s where the median made 0.325 s). What a query costs
// besides the path grows with the idle between its packets (the
// processes at both ends and the line's forwarder wake from a longer
// sleep, into caches other work took): the same SELECT 1 on the same 1 ms
// line had 13 µs besides the line back to back and several times that
// paced one per 30 ms, and across the 30 ms line 115–680 µs, the most on
// the busiest machines. One line cannot tell how much of it a shorter
// path's closer queries would shed, so the range runs from the wire alone
// to the rest kept whole; its high end is then the truth at the longer
// line's idle, pgbench on the 1 ms line paced one query per 30 ms,
// within 15% (issue 25 §2.5 took a mean less a median: 1.43–1.83). The
// 15% is the truth's own spread on this 2-vCPU VM, shared with other
// work. The rest the plan keeps is db ping's and the truth's is
// pgbench's, and two clients waking from 30 ms differ: alike on a quiet
// machine (0.4 and 0.3–0.4 ms a query), but with other tests running
// beside it db ping's read 0.58 ms and pgbench's 0.28, on both lines
// (a fresh clone's CI). So the high end is held to the paced truth less
// the difference the two clients' typical times across the measured
// line show (each's median query × N), measured in the same run: the
// model, rest kept whole, judged in one client's terms.
func TestPlanChattyAcrossRTT(t *testing.T) {
	setUp(t, testbed.Slots) // the hosts' own share of a round trip is the figure
	n, planFor := 300, "2s"
	if long() {
		n, planFor = 2000, "5s"
	}
	const near, far = 1 * time.Millisecond, 30 * time.Millisecond
	var at2, at10 chattySide
	t.Run("1ms", func(t *testing.T) { at2 = measureChattySide(t, near, far, n, planFor) })
	t.Run("30ms", func(t *testing.T) { at10 = measureChattySide(t, far, near, n, planFor) })
	if t.Failed() {
		return
	}
	for _, c := range []struct{ from, to chattySide }{{at2, at10}, {at10, at2}} {
		truth := c.to.pgbenchTypical
		ratio := c.from.predicted / truth
		inRange := c.from.low <= truth && truth <= c.from.high
		t.Logf("RESULT plan chatty: measured across %v (network %.3f ms, now %.3f s for %d queries; there pgbench %.3f s, db ping --count %.3f s), "+
			"predicted across %v %.3f s (bounds %.3f–%.3f s); real there pgbench %.3f s typical, %.3f s whole (paced one per %v: %.3f s), db ping --count %.3f s: predicted ÷ pgbench %.3f, ÷ db ping %.3f, pgbench within the bounds: %v; %s",
			c.from.rtt, c.from.network*1e3, c.from.now, n, c.from.pgbench, c.from.ping, c.to.rtt, c.from.predicted, c.from.low, c.from.high,
			truth, c.to.pgbench, c.from.rtt, c.to.paced, c.to.ping, ratio, c.from.predicted/c.to.ping, inRange, c.to.line)
		if c.to.rtt > c.from.rtt {
			// A longer path: its wire is most of each query.
			if math.Abs(ratio-1) > 0.15 {
				t.Errorf("measured across %v, plan chatty predicted %d queries across %v in %.3f s; pgbench's typical run took %.3f s there (%.3f, bound ±15%%)",
					c.from.rtt, n, c.to.rtt, c.from.predicted, truth, ratio)
			}
			continue
		}
		// A shorter path: the range must hold the truth, and its high end
		// be the truth at the measured path's idle.
		switch {
		case c.from.high <= 0:
			t.Errorf("measured across %v, plan chatty gave no range for %v: the network's bounds are missing", c.from.rtt, c.to.rtt)
		case !inRange:
			t.Errorf("measured across %v, plan chatty put %d queries across %v at %.3f–%.3f s; pgbench's typical run took %.3f s there, outside",
				c.from.rtt, n, c.to.rtt, c.from.low, c.from.high, truth)
		default:
			clients := c.from.now - c.from.pgbenchTypical
			t.Logf("RESULT plan chatty's high end for %v: %.3f s; db ping's queries across %v took %.3f s more than pgbench's (%.0f µs a query), so in pgbench's terms %.3f s; pgbench paced one per %v there %.3f s: %.3f",
				c.to.rtt, c.from.high, c.from.rtt, clients, clients/float64(n)*1e6, c.from.high-clients, c.from.rtt, c.to.paced, (c.from.high-clients)/c.to.paced)
			if r := (c.from.high - clients) / c.to.paced; math.Abs(r-1) > 0.15 {
				t.Errorf("measured across %v, plan chatty's high end for %v is %.3f s, %.3f s in pgbench's terms (db ping's queries there took %.3f s more than pgbench's); pgbench paced one query per %v took %.3f s there (%.3f, bound ±15%%)",
					c.from.rtt, c.to.rtt, c.from.high, c.from.high-clients, clients, c.from.rtt, c.to.paced, r)
			}
		}
	}
	// The plan's own "now" is db ping's: it must read its own line as
	// pgbench does, or the prediction's accuracy is luck. It is a typical
	// run's, from the median query (the mean's excess is a note of its
	// own), so it is held to pgbench's median: with both CPUs half busy
	// in 5 ms bursts, pgbench's 300 queries across 1 ms took 0.431 s
	// where its median made 0.32 s, as the plan's.
	for _, s := range []chattySide{at2, at10} {
		t.Logf("RESULT across %v: plan chatty's now %.3f s; pgbench's median query × %d %.3f s, its whole run %.3f s", s.rtt, s.now, n, s.pgbenchTypical, s.pgbench)
		if r := s.now / s.pgbenchTypical; math.Abs(r-1) > 0.15 {
			t.Errorf("across %v the plan read %.3f s now for %d queries, pgbench's median query × %d is %.3f s (%.3f)", s.rtt, s.now, n, n, s.pgbenchTypical, r)
		}
	}
}
