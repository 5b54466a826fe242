//go:build linux

package experiments

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
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
	t0 := time.Now()
	for {
		if psql(t, pg, pg.Primary, fmt.Sprintf("SELECT coalesce(bool_or(flush_lsn >= '%s'), false) FROM pg_stat_replication WHERE application_name = '%s'", at, pg.Standby.Name)) == "t" {
			return time.Since(t0)
		}
		if time.Since(t0) > limit {
			t.Fatalf("the standby did not flush up to %s within %v", at, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// standbyFlush measures the standby's log flush with `narrows disk` on the
// filesystem that holds its data directory, in the walreceiver's shape:
// 8 KiB writes, each followed by fdatasync (PostgreSQL's wal_sync_method on
// Linux), one at a time. It returns the p50 of write + flush, which is
// what the standby does before it acknowledges a commit, and of the flush
// alone.
func standbyFlush(t *testing.T, pg *dbserver.Postgres) (commit, flush float64) {
	t.Helper()
	res := itest.Run(t, 60*time.Second, nil, "disk", "--path", filepath.Dir(pg.Standby.Dir), "--rw", "write", "--block", "8K", "--qd", "1",
		"--sync", "fdatasync", "--size", "64M", "--duration", "2s", "--json")
	if res.Code != 0 {
		t.Fatalf("narrows disk exited %d: %s", res.Code, res.Stderr)
	}
	_, sum := itest.Records(t, res.Stdout)
	ps, _ := itest.Obj(sum, "disk")["patterns"].([]any)
	if len(ps) != 1 {
		t.Fatalf("narrows disk: %d patterns in %v", len(ps), sum)
	}
	p := ps[0].(map[string]any)
	return jnum(p, "latency_p50_seconds"), jnum(itest.Obj(p, "flush_latency"), "latency_p50_seconds")
}

// loadCommits runs `narrows db load` on host A against the primary at a
// low rate (one row per commit) and returns its summary's commit latency.
func loadCommits(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, d time.Duration) (p50, p99 float64, commits int) {
	t.Helper()
	res := runOnA(t, l, d+60*time.Second,
		"db", "load", "--dsn", pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword), "--rate", "40KB/s", "--duration", d.String(), "--json")
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

// TestSyncCommit is experiment "synchronous commit": synchronous_commit =
// on with the standby across a 10 ms RTT line named in
// synchronous_standby_names. Every commit waits for the standby to write
// and flush its log, so the commit latency `narrows db load` reads must lie
// between the RTT and (the same commit with the standby asynchronous + RTT
// + the standby's write-and-flush latency, as `narrows disk` measures it)
// + 15%: a synchronous commit does all the local work of an asynchronous
// one (the client's round trip to the primary, its own WAL flush) and then
// waits for the standby. The RTT is what `narrows net rr`
// reads on the line (the set 10 ms, checked, plus the forwarder's own
// ~0.1-0.2 ms). The same load with the standby
// asynchronous is the control: there the commit does not wait for the line.
func TestSyncCommit(t *testing.T) {
	setUp(t)
	const rtt = 10 * time.Millisecond
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: 100e6})
	// The line's RTT as a round trip on it reads (narrows net rr, 64 B
	// each way), which is what a commit's acknowledgement pays: the set
	// delay plus the forwarder's handling, ~0.1-0.2 ms here.
	startAgent(t, l)
	rr := runOnA(t, l, time.Minute, "net", "rr", "--to", agentAddr(l), "--duration", "2s", "--json")
	_, rs := itest.Records(t, rr.Stdout)
	lineRTT := jnum(itest.Obj(rs, "rr"), "rtt_p50_seconds")
	if lineRTT < rtt.Seconds() || lineRTT > rtt.Seconds()+0.001 {
		t.Fatalf("narrows net rr read %.3f ms across a %v line: the line is not what it was set to (±1 ms)", lineRTT*1e3, rtt)
	}
	pg := startPG(t, l)
	d := 4 * time.Second
	if long() {
		d = 20 * time.Second
	}
	if got := psql(t, pg, pg.Primary, "SHOW synchronous_commit"); got != "on" {
		t.Fatalf("synchronous_commit is %q on the primary, want on", got)
	}
	asyncP50, asyncP99, asyncN := loadCommits(t, l, pg, d)
	setSync(t, pg, true)
	defer setSync(t, pg, false)
	before := l.Stats()
	p50, p99, n := loadCommits(t, l, pg, d)
	line := lineRecord(before, l.Stats())
	diskCommit, diskFlush := standbyFlush(t, pg)
	model := asyncP50 + lineRTT + diskCommit
	upper := 1.15 * model
	t.Logf("RESULT sync commit: line RTT %v set, %.3f ms read by narrows net rr (p50), 100 Mbit/s; standby write+fdatasync p50 %.1f µs (fdatasync alone %.1f µs, narrows disk, 8 KiB); "+
		"commit p50 %.2f ms, p99 %.2f ms over %d commits (%.3f of asynchronous + RTT + standby flush; bounds %.2f–%.2f ms); asynchronous standby: commit p50 %.3f ms, p99 %.3f ms over %d commits; %s",
		rtt, lineRTT*1e3, diskCommit*1e6, diskFlush*1e6, p50*1e3, p99*1e3, n, p50/model, lineRTT*1e3, upper*1e3, asyncP50*1e3, asyncP99*1e3, asyncN, line)
	if p50 < lineRTT {
		t.Errorf("commit p50 %.3f ms with a synchronous standby is below the line's RTT %.3f ms: a commit cannot be acknowledged faster than a round trip", p50*1e3, lineRTT*1e3)
	}
	if p50 > upper {
		t.Errorf("commit p50 %.3f ms is above (asynchronous commit %.3f ms + RTT %.3f ms + standby flush %.1f µs) + 15%% = %.3f ms",
			p50*1e3, asyncP50*1e3, lineRTT*1e3, diskCommit*1e6, upper*1e3)
	}
	if asyncP50 > rtt.Seconds()/2 {
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
	setUp(t)
	const rtt = 10 * time.Millisecond
	rows, rate := reindexCase()
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: rate})
	// What one stream carries A→B, as narrows measures it: the figure a
	// DBA would divide the rebuild's log by.
	startAgent(t, l)
	capacity, _ := streamOnce(t, l, 3*time.Second)
	pg := startPG(t, l)
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

	// 1. No standby: it is stopped, and nothing waits for it.
	if err := pg.StopStandby(context.Background()); err != nil {
		t.Fatal(err)
	}
	alone, walAlone, aloneRuns := best(nil)
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
	before := l.Stats()
	syncT, walSync, _ := reindex()
	line := lineRecord(before, l.Stats())
	floor := time.Duration(walSync * 8 / float64(rate) * float64(time.Second))
	predicted := time.Duration(walSync / capacity * float64(time.Second))

	t.Logf("RESULT reindex: index %.0f MB (%d rows); line RTT %v, %.0f Mbit/s; no standby %v (best of %v; WAL %.0f MB); asynchronous standby %v (best of %v; WAL %.0f MB), the standby flushed the last of it up to %v later; "+
		"synchronous standby %v (WAL %.0f MB; shipping it at the line rate takes %v, at the %.2f MB/s narrows net stream read %v: %.2f of the time taken); sync/no standby %.1f×; %s",
		size/1e6, rows, rtt, float64(rate)/1e6, alone.Round(time.Millisecond), aloneRuns, walAlone/1e6, async.Round(time.Millisecond), asyncRuns, walAsync/1e6, behind.Round(time.Millisecond),
		syncT.Round(time.Millisecond), walSync/1e6, floor.Round(time.Millisecond), capacity/1e6, predicted.Round(time.Millisecond), predicted.Seconds()/syncT.Seconds(),
		syncT.Seconds()/alone.Seconds(), line)
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
