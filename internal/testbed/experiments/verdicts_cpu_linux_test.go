//go:build linux

package experiments

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/testbed"
)

// cpuQuota makes a cgroup whose CPU quota is cores (a container's
// limits.cpu, docker --cpus, systemd's CPUQuota) and runs narrows' own
// commands in it from now on; the cgroup goes at the scenario's end.
func (c *Case) cpuQuota(cores float64) {
	c.T.Helper()
	const period = 100000
	cg, v2 := c.newCgroup("cpu", "cpu", "+cpu")
	if v2 {
		c.setCgroup(cg, "cpu.max", fmt.Sprintf("%d %d", int(cores*period), period))
	} else {
		c.setCgroup(cg, "cpu.cfs_period_us", fmt.Sprint(period))
		c.setCgroup(cg, "cpu.cfs_quota_us", fmt.Sprint(int(cores*period)))
	}
	c.cgroup = cg
	c.cgroupMount = "mount -t cgroup2 cgroup2 /sys/fs/cgroup"
	if !v2 {
		c.cgroupMount = "mount -t tmpfs cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/cpu && mount -t cgroup -o " + cpuHierarchy(c) + " cgroup /sys/fs/cgroup/cpu"
	}
}

// cpuHierarchy is the controllers mounted with cgroup v1's cpu controller
// on this host ("cpu", or "cpu,cpuacct"): mounted again elsewhere, the
// hierarchy must be named by all of them.
func cpuHierarchy(c *Case) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		c.T.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		_, post, ok := strings.Cut(line, " - ")
		g := strings.Fields(post)
		if !ok || len(g) < 3 || g[0] != "cgroup" {
			continue
		}
		var ctl []string
		for _, o := range strings.Split(g[2], ",") {
			if o != "rw" && o != "ro" && !strings.Contains(o, "=") {
				ctl = append(ctl, o)
			}
		}
		if slices.Contains(ctl, "cpu") {
			return strings.Join(ctl, ",")
		}
	}
	c.T.Fatal("no cgroup v1 hierarchy with the cpu controller in /proc/self/mountinfo")
	return ""
}

var cpuScenarios = []Scenario{
	{
		Name: "stream/cpu-quota", Share: testbed.Slots, CI: true,
		Question: "one stream is far below this fast link: is it the network?",
		Truth: "a veth pair with no rate limit (one stream crosses it at several Gbit/s); narrows runs in a cgroup whose CPU quota is a fifth of a core, " +
			"as in a container with limits.cpu 200m: the quota sets the rate",
		Say:    []string{"stream.cpu_limited"},
		NotSay: []string{"stream.link_limited", "stream.window_limited", "stream.loss_limited", "stream.per_stream_limited", "stream.host_limited"},
		Run: func(c *Case) {
			ln := c.Link(testbed.LinkOptions{})
			addr := c.Agent(ln.B)
			c.cpuQuota(0.2)
			rep := c.stream(ln.A, addr, 4*time.Second)
			r := rep.Stream.Runs[0]
			c.Within("the client's CPU limit read / the quota set", r.CPU.LocalLimitCores, 0.2, 1, 1, "read from the cgroup narrows ran in")
			c.Within("the client's CPU use / its quota", r.CPU.Local, 20, 0.8, 1.05,
				"a process held to its quota uses all of it, less what it waits for the network; above 1.05 would be more than the quota gives")
		},
	}, {
		Name: "stream/cpu-quota-roomy", Share: testbed.Slots, CI: true,
		Question: "is it the network, or the container's CPU limit?",
		Truth: "100 Mbit/s, 8 ms; narrows runs in a cgroup whose CPU quota is one core, as in a container with limits.cpu 1: " +
			"one stream needs a small part of it, and the line's rate is the limit",
		Say:    []string{"stream.link_limited"},
		NotSay: []string{"stream.cpu_limited", "stream.window_limited", "stream.loss_limited"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 8 * time.Millisecond, RateBitsPerSecond: 100e6})
			addr := c.Agent(l.B)
			c.cpuQuota(1)
			rep := c.stream(l.A, addr, 5*time.Second)
			c.Within("the client's CPU limit read / the quota set", rep.Stream.Runs[0].CPU.LocalLimitCores, 1, 1, 1, "read from the cgroup narrows ran in")
			c.Within("throughput / payload share of the line", rep.Stream.Throughput, payload*100e6, 0.85, 1.02,
				"slow start costs the first round trips; above 1.02 would be faster than the line")
		},
	},
}

// underLoadQuota runs `net rr --under-load` as underLoad does on its
// short queue (no queue can build on the path), with narrows in a cgroup
// whose CPU quota is cores, and returns the report and how many periods
// the cgroup was throttled in, by its own count.
func (c *Case) underLoadQuota(cores float64) (*result.Report, int64) {
	var before int64
	rep, _ := c.underLoadAfter(3000, 0, func() {
		c.cpuQuota(cores)
		_, before = sysinfo.CgroupThrottled(c.cgroup)
	})
	periods, after := sysinfo.CgroupThrottled(c.cgroup)
	if periods == 0 {
		// Not one period under the quota: narrows did not run in it,
		// and no count of throttling could tell anything.
		c.T.Fatalf("the cgroup %s counted no periods under its quota", c.cgroup)
	}
	return rep, after - before
}

var cpuRRScenarios = []Scenario{
	{
		Name: "rr/cpu-quota-tail", Share: testbed.Slots, CI: true,
		Question: "will a backup from this container slow its chatty reports?",
		Truth: "50 Mbit/s, 2 ms, a queue of two packets (no queue can build on the path); narrows runs in a cgroup whose CPU quota is a twentieth of a core: " +
			"the load's copies use it up, and a round trip that comes due then waits for the next period, while most do not",
		Say:    []string{"rr.under_load_tail"},
		NotSay: []string{"rr.bufferbloat", "rr.under_load_ok"},
		Run: func(c *Case) {
			rep, throttled := c.underLoadQuota(0.05)
			l := rep.Loaded
			c.Expect("the cgroup was throttled during the run, by its own count", throttled > 0, fmt.Sprintf("%d periods", throttled))
			c.Within("the CPU limit narrows read / the quota set", l.CPULimitCores, 0.05, 1, 1, "read from the cgroup narrows ran in")
			var detail string
			for _, f := range rep.Findings {
				if f.Code == "rr.under_load_tail" {
					detail = f.Detail
				}
			}
			c.Expect("the tail's words name the CPU limit", strings.Contains(detail, "CPU limit of 0.05 of a core"), detail)
		},
	},
	{
		Name: "rr/cpu-quota-roomy", Share: testbed.Slots,
		Question: "will a backup from this container slow its chatty reports?",
		Truth:    "50 Mbit/s, 2 ms, a queue of two packets; narrows runs in a cgroup whose CPU quota is one core, far more than the load needs: on a quiet machine the round trips hold",
		Say:      []string{"rr.under_load_ok"},
		NotSay:   []string{"rr.bufferbloat", "rr.under_load_tail"},
		Quiet:    []string{"rr.under_load_ok", "rr.under_load_tail"},
		Run: func(c *Case) {
			rep, throttled := c.underLoadQuota(1)
			c.lostQueries(rep)
			c.Expect("the cgroup was not throttled, by its own count", throttled == 0, fmt.Sprintf("%d periods", throttled))
		},
	}, {
		Name: "disk/cpu-quota", Share: testbed.Slots, CI: true,
		Question: "how many random reads does this storage take at queue depth 32?",
		Truth: "a real ext4 on a loop device; narrows runs in a cgroup whose CPU quota is a twentieth of a core, as in a container with limits.cpu 50m: " +
			"it cannot keep 32 reads in flight or reap their completions for most of each period, so the figures are the limit's, not the storage's",
		Say:    []string{"disk.cpu_limited"},
		NotSay: []string{"disk.custom_pattern", "disk.memory_backed"},
		Run: func(c *Case) {
			dir := c.ext4(512 << 20)
			c.cpuQuota(0.05)
			rep := c.Narrows(nil, "disk", "--path", dir, "--profile", "custom", "--rw", "randread", "--block", "4K", "--qd", "32", "--size", "64M", "--duration", "2s")
			p := rep.Disk.Patterns[0]
			c.Within("the CPU limit narrows read / the quota set", p.CPULimitCores, 0.05, 1, 1, "read from the cgroup narrows ran in")
		},
	},
}
