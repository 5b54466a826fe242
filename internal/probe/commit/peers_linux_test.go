//go:build linux

package commit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/testbed"
)

// TestAgentFlushMatchesFio holds net commit's flush on the agent (what
// plan sync takes as the replica's) to fio writing the same log on the
// same filesystem: 8 KiB blocks through the page cache, each fdatasync'ed
// before the next, over a preallocated file of the commit test's default
// size, front to back and round again, with the agent's own idle between
// a flush and the next write (fio's thinktime: the agent waits on the
// network for the next block). The agent's fdatasync median must be
// within 10% of fio's. Without the idle, fio's back-to-back flushes read
// faster on this VM: the agent's median was 1.13-1.22 of them in five
// runs on an idle machine (a flush after an idle waits longer), and
// 0.98-1.09 of fio's with the idle in three. The agent is its own
// process, as on a replica's host (in the test's process, beside the client's goroutines, its flush
// read 1.14 of fio's: two programs' threads on two vCPUs, not the
// agent's). The tools run in turn, each first in every other round, and
// the median of the rounds' ratios is held: on a machine others load, a
// run a minute later meets another disk.
func TestAgentFlushMatchesFio(t *testing.T) {
	if testing.Short() {
		t.Skip("runs net commit and fio for about 15 s")
	}
	fio := testbed.Fio(t)
	testbed.LockTiming(t)
	dir := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir})
	const rounds = 9
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
		ratios = append(ratios, flush/f.SyncP50.Seconds())
		t.Logf("round %d: the agent's fdatasync p50 %.1f µs; fio's %.1f µs (%.0f writes/s, thinking %v): %.3f", r+1, flush*1e6, f.SyncP50.Seconds()*1e6, f.IOPS, idle, flush/f.SyncP50.Seconds())
	}
	ratio := testbed.Median(ratios)
	msg := fmt.Sprintf("net commit's flush on the agent in %s, 8 KiB + fdatasync: its p50 %.3f of fio's (median of %d rounds)", dir, ratio, len(ratios))
	t.Log("RESULT " + msg)
	if ratio < 0.9 || ratio > 1.1 {
		t.Error(msg + ": outside ±10%")
	}
}
