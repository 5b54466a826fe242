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
// fdatasync to fio on the same filesystem: its flush's median within 10%
// of fio's, fio writing the same pattern (8 KiB through the page cache,
// each fdatasync'ed, over a preallocated, zero-filled 16 MiB file: a WAL
// segment).
//
// What this VM's disk does: its flush drifts by a third within a second
// (fio's own median read 146-246 µs in runs a second apart), so one
// run of each, even side by side in time, differs by up to 0.67-1.45
// (24 pairs of 250 ms), with no bias by which ran first (1.006 and 1.013
// over 48 pairs each). The test therefore pairs short runs, fio and
// narrows in turn, each first in every other pair, on segments laid out
// once (no file made or removed between the runs compared), and holds the
// geometric mean of 40 pairs' ratios: the spread of one pair's log ratio
// is about 0.14, so the mean's is about 0.022, and ±10% is four and a
// half of it. Held to the median of 9 pairs of 500 ms, it failed one CI
// run at 0.899 (pairs 0.66-1.24). Run side by side (both at once, each on
// its own segment) narrows read a median 1.106 of fio over 9 pairs
// (0.985-1.318): two writers' flushes queue on one device, and that is
// not the pattern compared.
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
	const pairs = 40
	var logSum float64
	for r := range pairs {
		var p result.DiskPattern
		var f testbed.FioFlush
		if r%2 == 0 {
			p, f = ours(), theirs()
		} else {
			f, p = theirs(), ours()
		}
		ratio := p.FlushLatency.P50.D().Seconds() / f.SyncP50.Seconds()
		logSum += math.Log(ratio)
		t.Logf("pair %d: narrows' fdatasync p50 %v (%.0f commits/s), fio's %v (%.0f writes/s): %.3f", r+1, p.FlushLatency.P50.D(), p.IOPS, f.SyncP50, f.IOPS, ratio)
	}
	flush := math.Exp(logSum / pairs)
	msg := fmt.Sprintf("narrows' 8 KiB write + fdatasync on %s: flush p50 %.3f of fio's (geometric mean of %d pairs of %v)", dir, flush, pairs, d)
	t.Log("RESULT " + msg)
	if flush < 0.9 || flush > 1.1 {
		t.Error(msg + ": outside ±10% of fio's")
	}
}
