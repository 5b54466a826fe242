//go:build linux

package disk

import (
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// logPattern is the log profile's 8 KiB write + fdatasync: the pattern
// plan sync takes as the local log flush and a DBA checks against
// pg_test_fsync.
func logPattern() Pattern {
	for _, p := range logProfile() {
		if p.Block == 8<<10 && p.Sync == result.SyncFdatasync {
			return p
		}
	}
	panic("the log profile has no 8 KiB write + fdatasync")
}

// TestLogWriterThroughCache: on a run that bypasses the cache (O_DIRECT),
// the log profile's fdatasync patterns write through the page cache, as
// PostgreSQL writes its WAL, and say so; its O_DSYNC patterns, and the
// data patterns after them, still bypass it: O_DIRECT is back on the file
// once the log pattern is done.
func TestLogWriterThroughCache(t *testing.T) {
	dir := t.TempDir()
	data := Pattern{Profile: result.ProfileData, RW: RandRead, Block: 8 << 10, QD: 1, Threads: 1, Sync: result.SyncNone}
	cfg := quick(dir, append(logProfile(), data)...)
	tg, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if !tg.direct {
		t.Skipf("the filesystem of %s refuses O_DIRECT: %v", dir, tg.Notes())
	}
	if err := tg.Layout(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := tg.Run(t.Context(), func(result.Interval) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Patterns {
		want := p.Profile == result.ProfileLog && p.Sync == result.SyncFdatasync
		if p.ThroughCache != want || p.IOs == 0 {
			t.Errorf("%s: through the cache %v after %d I/Os, want %v", p.Name, p.ThroughCache, p.IOs, want)
		}
	}
	fl, err := unix.FcntlInt(tg.f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_DIRECT == 0 {
		t.Error("O_DIRECT is off on the test file after the log patterns")
	}
}

// TestLogFlushMatchesPeers holds the log profile's 8 KiB write +
// fdatasync beside fio on the same filesystem, fio writing the same
// pattern (8 KiB through the page cache, each fdatasync'ed, over a
// preallocated, zero-filled 16 MiB file: a WAL segment), in short pairs,
// each tool first in every other pair, on segments laid out once.
//
// It asserts what holds on every machine: every pair measured both; the
// flush narrows reports is the fdatasync, not the write before it (above
// fio's write into the page cache); and it is one flush, not two and
// not none (the pairs' geometric mean within 2/3-3/2 of fio's). How close
// it reads to fio's is a speed claim, held side by side as a ratio by
// bench/commit.sh (issue 26: speed assertions out of the tests), as
// TestAgentFlushBesideFio's is.
//
// Why not ±10% here, as until 2026-11-27: where the waiting thread
// sleeps decides a third of a flush on this project's VMs. The disk's
// completion interrupt lands on one CPU (virtio1-req.0 on CPU 1); a
// waiter there is woken at once, one on the other CPU by a second
// wake-up: fio pinned (taskset) read 77-78 µs a fdatasync on CPU 1 and
// 106 µs on CPU 0. Unpinned, the geometric mean of 40 pairs read 1.006
// and 1.013 when this test was written, then 1.068-1.101 a day later
// (a fresh clone's CI run failed at 1.101; io_uring's and the portable
// pwrite + fdatasync engine's alike, 1.083 and 1.083-1.087, so not the
// engine); with both tools pinned to one CPU, five runs read 0.956-1.142
// (the test process's other threads then share the waiter's CPU).
// bench/commit.sh read 1.10 the same day (DIR=/var/tmp).
//
// pg_test_fsync's fdatasync test rewrites one 8 KiB block at offset 0
// every time (strace: pwrite64(fd, buf, 8192, 0), then fdatasync), where a
// WAL and narrows move on through a laid-out file: bench/commit.sh sets it
// beside narrows; it is not the same pattern to hold narrows to.
func TestLogFlushMatchesPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fio for about half a minute")
	}
	fio := testbed.Fio(t)
	testbed.LockTiming(t)
	dir := t.TempDir()
	const segment = 16 << 20
	const d = 200 * time.Millisecond
	tg, err := Open(Config{Dir: dir, Size: segment, Patterns: []Pattern{logPattern()}, Duration: d, Interval: d, Engine: EngineAuto, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.Layout(t.Context()); err != nil {
		t.Fatal(err)
	}
	file := testbed.FioLogFile(t, dir, segment)
	defer os.Remove(file)
	ours := func() result.DiskPattern {
		res, err := tg.Run(t.Context(), func(result.Interval) {})
		if err != nil || len(res.Patterns) != 1 || res.Patterns[0].FlushLatency == nil || !res.Patterns[0].ThroughCache {
			t.Fatalf("narrows' log pattern: %v %+v", err, res)
		}
		return res.Patterns[0]
	}
	theirs := func() testbed.FioFlush { return testbed.FioLogFlushOn(t, fio, file, segment, 8<<10, d, 0) }
	const pairs = 10
	var logSum float64
	for r := range pairs {
		var p result.DiskPattern
		var f testbed.FioFlush
		if r%2 == 0 {
			p, f = ours(), theirs()
		} else {
			f, p = theirs(), ours()
		}
		if p.FlushLatency.P50.D() <= f.WriteP50 {
			t.Errorf("pair %d: narrows' flush p50 %v is no more than fio's write into the page cache, %v: it timed the write, not the fdatasync",
				r+1, p.FlushLatency.P50.D(), f.WriteP50)
		}
		ratio := p.FlushLatency.P50.D().Seconds() / f.SyncP50.Seconds()
		logSum += math.Log(ratio)
		t.Logf("pair %d: narrows' fdatasync p50 %v (%.0f commits/s), fio's %v (%.0f writes/s): %.3f", r+1, p.FlushLatency.P50.D(), p.IOPS, f.SyncP50, f.IOPS, ratio)
	}
	flush := math.Exp(logSum / pairs)
	msg := fmt.Sprintf("narrows' 8 KiB write + fdatasync on %s: flush p50 %.3f of fio's (geometric mean of %d pairs of %v)", dir, flush, pairs, d)
	t.Log("RESULT " + msg)
	if flush < 2.0/3 || flush > 1.5 {
		t.Error(msg + ": not one flush to fio's one (a second flush timed reads 2×, none a fraction)")
	}
}
