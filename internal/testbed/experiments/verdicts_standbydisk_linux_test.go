//go:build linux

package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// walOnOwnFS moves the stopped standby's pg_wal onto an ext4 of its own
// (a loop device) and returns that device.
func (c *Case) walOnOwnFS(pg *dbserver.Postgres) string {
	c.T.Helper()
	itest.RequireRoot(c.T, "a loop device")
	image := filepath.Join(c.T.TempDir(), "wal.img")
	if f, err := os.Create(image); err != nil || f.Truncate(1<<30) != nil || f.Close() != nil {
		c.T.Fatalf("an image for the standby's WAL: %v", err)
	}
	dir, err := pg.ScratchDir("walfs")
	if err != nil {
		c.T.Fatal(err)
	}
	dev := c.mountExt4At(image, dir)
	// Stop the standby before the filesystem goes (cleanups run last first).
	c.T.Cleanup(func() { pg.StopStandby(context.Background()) }) //nolint:errcheck
	wal := filepath.Join(pg.Standby.Dir, "pg_wal")
	for _, cmd := range [][]string{
		{"cp", "-a", wal, filepath.Join(dir, "pg_wal")},
		{"rm", "-rf", wal},
		{"ln", "-s", filepath.Join(dir, "pg_wal"), wal},
		{"chown", "-h", "postgres:", wal},
		{"chown", "postgres:", dir},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			c.T.Fatalf("%v: %v: %s", cmd, err, out)
		}
	}
	return dev
}

// throttleStandby holds the running standby's processes to bps bytes a
// second of writes to dev: with cgroup v1's blkio, the writes a process
// submits itself (an fsync's among them); with cgroup v2's io.max, the
// writeback of what it dirtied too.
func (c *Case) throttleStandby(pg *dbserver.Postgres, dev string, bps int64) {
	c.T.Helper()
	num, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
	if err != nil {
		c.T.Fatal(err)
	}
	majMin := strings.TrimSpace(string(num))
	cg, v2 := c.newCgroup("standby", "blkio", "+io +memory")
	if v2 {
		c.setCgroup(cg, "io.max", fmt.Sprintf("%s wbps=%d", majMin, bps))
	} else {
		c.setCgroup(cg, "blkio.throttle.write_bps_device", fmt.Sprintf("%s %d", majMin, bps))
	}
	pid, err := os.ReadFile(filepath.Join(pg.Standby.Dir, "postmaster.pid"))
	if err != nil {
		c.T.Fatal(err)
	}
	main := strings.SplitN(string(pid), "\n", 2)[0]
	kids, _ := exec.Command("pgrep", "-P", main).Output()
	// The postmaster first: what it starts from now on is born inside.
	for _, p := range append([]string{main}, strings.Fields(string(kids))...) {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(p), 0); err != nil && !errors.Is(err, syscall.ESRCH) {
			c.T.Fatalf("moving %s into %s: %v", p, cg, err)
		}
	}
}

var standbyDiskScenarios = []Scenario{
	{
		Name: "repl/standby-disk-slow", CI: true,
		Question: "the standby falls behind: is it the network?",
		Truth: "4 ms, 100 Mbit/s, 4 MB/s of log; the standby's WAL is on a filesystem of its own whose writes are held to 1 MiB/s: " +
			"its walreceiver, which writes and flushes between its reads, holds the stream back, and the send queue grows on the primary",
		Say:    []string{"repl.standby_disk_bottleneck"},
		NotSay: []string{"repl.keeping_up", "repl.send_queue_growing"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 4 * time.Millisecond, RateBitsPerSecond: 100e6})
			pg := startPG(c.T, l)
			if err := pg.StopStandby(context.Background()); err != nil {
				c.T.Fatal(err)
			}
			dev := c.walOnOwnFS(pg)
			if err := pg.StartStandby(context.Background()); err != nil {
				c.T.Fatal(err)
			}
			c.throttleStandby(pg, dev, 1<<20)
			rep := c.replWatch(l, pg, "4MB/s", 12*time.Second, 2*time.Second, 8*time.Second)
			last := rep.Repl.Last
			if last == nil || len(last.Replicas) != 1 {
				c.T.Fatalf("db repl's last poll does not list the one standby: %+v", last)
			}
			st := last.Replicas[0]
			c.Expect("the walreceiver waited on its disk at the last poll (the throttle holds)", strings.HasPrefix(st.ReceiverWait, "IO/"), st.ReceiverWait)
		},
	},
}
