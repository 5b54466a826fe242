//go:build linux

package experiments

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
	"golang.org/x/sys/unix"
)

// The fleet (issue 29): agents on this machine, each with a directory of
// its own, run the data profile together. In fleet/throttled-host one
// agent's directory is an ext4 on a loop device whose reads cgroup v2's
// io.max holds to a few hundred a second for that agent: narrows must name
// that host, and only it; in fleet/even none is throttled, and none named.
var fleetScenarios = []Scenario{
	{
		Name: "fleet/throttled-host", CI: true, Share: testbed.Slots,
		Question: "does every host get what the cluster promises when all of them work at once, and which one does not?",
		Truth: "four agents on this machine run the data profile together; the fourth's directory is an ext4 on a loop device whose reads and writes the blkio controller (io.max on cgroup v2) holds to 300 a second for it; " +
			"a fifth address answers nothing",
		Say:    []string{"fleet.outlier", "fleet.host_failed"},
		NotSay: []string{"fleet.even"},
		Run:    func(c *Case) { fleetRun(c, true) },
	},
	{
		Name: "fleet/even", CI: true, Share: testbed.Slots,
		Question: "does every host get what the cluster promises when all of them work at once?",
		Truth:    "four agents on this machine, each with a directory of its own on the machine's disk, run the data profile together: none is throttled",
		Say:      []string{"fleet.even"},
		NotSay:   []string{"fleet.outlier", "fleet.host_failed"},
		Run:      func(c *Case) { fleetRun(c, false) },
	},
}

// fleetRun runs fleet disk over four agents (the last throttled when
// throttle, with a fifth address where nothing answers).
func fleetRun(c *Case, throttle bool) {
	var on []string
	for i := range 4 {
		dir := c.T.TempDir()
		var dev string
		if throttle && i == 3 {
			image := filepath.Join(c.T.TempDir(), "slow.img")
			if f, err := os.Create(image); err != nil || f.Truncate(256<<20) != nil || f.Close() != nil {
				c.T.Fatalf("an image for the slow host: %v", err)
			}
			dev = c.mountExt4At(image, dir)
		}
		a := itest.StartAgent(c.T, []string{"--disk-path", dir})
		if dev != "" {
			num, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
			if err != nil {
				c.T.Fatal(err)
			}
			majMin := strings.TrimSpace(string(num))
			cg, v2 := c.newCgroup("slowhost", "blkio", "+io")
			if v2 {
				c.setCgroup(cg, "io.max", fmt.Sprintf("%s riops=300 wiops=300", majMin))
			} else { // cgroup v1's blkio: the I/O the process submits itself, as O_DIRECT's is
				c.setCgroup(cg, "blkio.throttle.read_iops_device", majMin+" 300")
				c.setCgroup(cg, "blkio.throttle.write_iops_device", majMin+" 300")
			}
			c.setCgroup(cg, "cgroup.procs", fmt.Sprint(a.Cmd.Process.Pid))
		}
		on = append(on, a.Addr)
	}
	if throttle {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			c.T.Fatal(err)
		}
		on = append(on, ln.Addr().String())
		ln.Close()
	}
	// Whatever the hosts wrote (their test files laid out, the loop
	// device's backing file through the page cache) reaches the disk
	// before the scenario gives its shares back: a proof's TestReindexStandby,
	// whose standby flushes to the same disk, read 0.72 of plan sync's
	// prediction beside the writeback of 256 MiB of these files.
	defer unix.Sync()
	rep := c.Narrows(nil, "fleet", "disk", "--on", strings.Join(on, ","), "--profile", "data", "--duration", "1s", "--size", "32M", "--timeout", "3s")
	f := rep.Fleet
	if f == nil {
		c.T.Fatal("fleet disk wrote no fleet")
	}
	if f.Start != nil {
		c.T.Logf("started together: %d hosts, median %v after the instant, skew %v", f.Start.Hosts, f.Start.MedianAfter.D(), f.Start.Skew.D())
	}
	for _, p := range f.Patterns {
		c.T.Logf("%s: %d hosts, %.0f IOPS, median host %.0f", p.Name, p.Hosts, p.IOPS, p.MedianIOPS)
	}
	if throttle {
		o := finding(rep, "fleet.outlier")
		c.Expect("the throttled host is the one named", o != nil && strings.Contains(o.Summary, on[3]+" gave") &&
			!strings.Contains(o.Summary, on[0]+" gave") && !strings.Contains(o.Summary, on[1]+" gave") && !strings.Contains(o.Summary, on[2]+" gave"),
			fmt.Sprint(o))
	}
	var sum float64
	for _, h := range f.Hosts {
		if h.Disk != nil && len(h.Disk.Patterns) > 0 {
			sum += h.Disk.Patterns[0].IOPS
		}
	}
	c.Within("the fleet's IOPS / the hosts' own, summed (the first pattern)", f.Patterns[0].IOPS, sum, 0.99, 1.01, "issue 29: the aggregate is the sum of the hosts' figures")
}
