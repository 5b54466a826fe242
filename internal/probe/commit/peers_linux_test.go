//go:build linux

package commit_test

import (
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/testbed"
)

// TestAgentFlushBesideFio runs net commit's flush on the agent (what plan
// sync takes as the replica's) beside fio writing the same log on the
// same filesystem: 8 KiB blocks through the page cache, each fdatasync'ed
// before the next, over a preallocated file of the commit test's default
// size, front to back and round again, with the agent's own idle between
// a flush and the next write (fio's thinktime: the agent waits on the
// network for the next block). The agent is its own process, as on a
// replica's host. The tools run in turn, each first in every other round.
//
// It asserts what holds on every machine: each round both measured, and
// the agent's figure is the flush, not the write before it (above fio's
// write into the page cache, which is a tenth of a flush here). How close
// the agent's flush reads to fio's is a speed claim, held side by side as
// a ratio by bench/commit.sh (issue 26: speed assertions out of the
// tests). Held here to ±10% on the median of 9 rounds, it failed a CI run
// at 1.108 (rounds 0.918-1.278, 7 of 9 above 1): a flush after the
// agent's network wait and one after fio's sleep meet the VM's disk, and
// its vCPUs' wake-ups, differently from run to run.
func TestAgentFlushBesideFio(t *testing.T) {
	if testing.Short() {
		t.Skip("runs net commit and fio for about 5 s")
	}
	fio := testbed.Fio(t)
	testbed.LockTiming(t)
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir})
	const rounds = 3
	d := 500 * time.Millisecond
	var ratios []float64
	var idle time.Duration // the agent's last, for fio's think time
	for r := range rounds {
		var flush float64
		var f testbed.FioFlush
		steps := []func(){
			func() {
				res := itest.Run(t, time.Minute, nil, "net", "commit", "--to", a.Addr, "--block", "8K", "--in-flight", "1", "--ack", "flush", "--flush", "fdatasync",
					"--duration", d.String(), "--json")
				if res.Code != 0 {
					t.Fatalf("net commit: exit %d: %s", res.Code, res.Stderr)
				}
				_, sum := itest.Records(t, res.Stdout)
				p50, ok := itest.Num(itest.Obj(sum, "commit", "agent_flush_latency"), "latency_p50_seconds")
				if !ok || p50 <= 0 {
					t.Fatalf("net commit reported no flush on the agent: %v", sum)
				}
				flush = p50
				// The agent's idle between a flush and the next block: the
				// commit's period less its write and its flush.
				cps, _ := itest.Num(itest.Obj(sum, "commit"), "commits_per_second")
				write, _ := itest.Num(itest.Obj(sum, "commit", "agent_write_latency"), "latency_p50_seconds")
				if cps > 0 {
					idle = max(time.Duration((1/cps-write-p50)*float64(time.Second)), 0)
				}
			},
			func() { f = testbed.FioLogFlush(t, fio, dir, commit.DefaultSize, 8<<10, d, idle) },
		}
		if r%2 == 1 {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, st := range steps {
			st()
		}
		if f.SyncP50 <= 0 || f.WriteP50 <= 0 {
			t.Fatalf("round %d: fio measured no write or flush: %+v", r+1, f)
		}
		if flush <= f.WriteP50.Seconds() {
			t.Errorf("round %d: the agent's flush p50 %.1f µs is no more than fio's write into the page cache, %.1f µs: the agent timed the write, not the fdatasync",
				r+1, flush*1e6, f.WriteP50.Seconds()*1e6)
		}
		ratios = append(ratios, flush/f.SyncP50.Seconds())
		t.Logf("round %d: the agent's fdatasync p50 %.1f µs; fio's %.1f µs, its write %.1f µs (%.0f writes/s, thinking %v): %.3f",
			r+1, flush*1e6, f.SyncP50.Seconds()*1e6, f.WriteP50.Seconds()*1e6, f.IOPS, idle, flush/f.SyncP50.Seconds())
	}
	t.Logf("RESULT net commit's flush on the agent in %s, 8 KiB + fdatasync: its p50 %.3f of fio's (median of %d rounds; bench/commit.sh holds it)",
		dir, metric.Median(ratios), len(ratios))
}
