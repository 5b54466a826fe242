//go:build linux

package experiments

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/testbed"
)

// The fleet's network (issue 29): a primary (host h0 of a switch) ships
// a stream to each of four replicas (h1-h4) at once, as an availability
// group ships each database's log to every replica. Each replica's path
// is its switch port toward it, shaped by tbf; the primary's own NIC is
// its veth, shaped by tbf where the scenario says. A virtual interface
// tells no true rate, so where the scenario knows it, it gives it as a
// DBA would (--assume nic=RATE).
var fleetNetScenarios = []Scenario{
	{
		Name: "fleetnet/weak-path", CI: true, Share: 2,
		Question: "the primary ships its log to four replicas at once: which replica's path is the weak one?",
		Truth: "four replicas behind one switch; the paths to three carry 150 Mbit/s and to the fourth 40 Mbit/s (tbf on its switch port); the primary's NIC carries 1 Gbit/s (tbf), " +
			"given as --assume nic=1Gbit/s, and is never full; a fifth address on the switch answers nothing",
		Say:    []string{"fleetnet.weak_path", "fleet.host_failed"},
		NotSay: []string{"fleetnet.even", "fleetnet.nic_limited", "fleetnet.slow_replica"},
		Run: func(c *Case) {
			fleetNetRun(c, []int64{150e6, 150e6, 150e6, 40e6}, 1e9, true)
		},
	},
	{
		Name: "fleetnet/weak-path-nic-unknown", CI: true, Share: 2,
		Question: "the primary ships its log to four replicas at once: which replica's path is the weak one, when this host's NIC tells no true rate?",
		Truth: "as fleetnet/weak-path (three paths at 150 Mbit/s, one at 40), the primary's NIC a veth with no rate and none given: " +
			"the fourth replica is far behind, but whether its path or the primary's link held it cannot be told from the primary's figures",
		Say:    []string{"fleetnet.slow_replica"},
		NotSay: []string{"fleetnet.weak_path", "fleetnet.even", "fleetnet.nic_limited", "fleet.host_failed"},
		Run: func(c *Case) {
			fleetNetRun(c, []int64{150e6, 150e6, 150e6, 40e6}, 0, false)
		},
	},
	{
		Name: "fleetnet/even", CI: true, Share: 2,
		Question: "the primary ships its log to four replicas at once: does each get what one would alone?",
		Truth:    "four replicas behind one switch, the path to each 150 Mbit/s (tbf on its switch port); the primary's NIC a veth with no rate: no path is weaker than another",
		Say:      []string{"fleetnet.even"},
		NotSay:   []string{"fleetnet.weak_path", "fleetnet.slow_replica", "fleetnet.nic_limited", "fleet.host_failed"},
		Run: func(c *Case) {
			fleetNetRun(c, []int64{150e6, 150e6, 150e6, 150e6}, 0, false)
		},
	},
	{
		Name: "fleetnet/nic-limited", CI: true, Share: 2,
		Question: "the primary ships its log to four replicas at once: is it this host's link or the replicas' paths that hold them?",
		Truth: "four replicas behind one switch, the paths to them not shaped; the primary's NIC carries 200 Mbit/s (tbf on its veth), given as --assume nic=200Mbit/s: " +
			"the four streams share it, and the NIC is the limit",
		Say:    []string{"fleetnet.nic_limited"},
		NotSay: []string{"fleetnet.weak_path", "fleet.host_failed"},
		Run: func(c *Case) {
			fleetNetRun(c, []int64{0, 0, 0, 0}, 200e6, false)
		},
	},
}

// vethPayload is the share of a veth's tbf rate a stream's payload gets:
// each 1448-byte segment is 1514 bytes with its TCP (and timestamps),
// IP and Ethernet headers, which tbf counts.
const vethPayload = 1448.0 / 1514

// fleetNetRun puts a primary and len(paths) replicas on a switch, the
// path to replica i shaped to paths[i] (0: not shaped), the primary's NIC
// to nic (0: not shaped; given to narrows as --assume when it is), with
// an address that answers nothing beside them when dead, and runs fleet
// net from the primary to all.
func fleetNetRun(c *Case, paths []int64, nic int64, dead bool) {
	sw := testbed.NewTestSwitch(c.T, testbed.SwitchOptions{Hosts: len(paths) + 1, ToHost: append([]int64{0}, paths...), FromHost: []int64{nic}})
	primary := sw.Hosts[0]
	var to []string
	fastest := nic
	for i := range paths {
		to = append(to, c.Agent(sw.Hosts[i+1]))
		fastest = max(fastest, paths[i])
	}
	c.rate = float64(fastest) // no replica's streams faster than the fastest path, nor the NIC
	nothing := ""
	if dead {
		b := sw.Prefix.Addr().As4()
		b[3] = 200 // on the switch, no host: its ARP goes unanswered
		nothing = net.JoinHostPort(net.IP(b[:]).String(), strconv.Itoa(agentPort))
		to = append(to, nothing)
	}
	args := []string{"fleet", "net", "--to", strings.Join(to, ","), "--duration", "3s", "--timeout", "2s"}
	if nic > 0 {
		args = append(args, "--assume", fmt.Sprintf("nic=%dMbit/s", nic/1e6))
	}
	code := 0 // every replica received; 1 when one did not
	if dead {
		code = 1
	}
	rep, _, _ := c.NarrowsExit(primary, code, args...)
	if rep == nil {
		c.T.Fatal("fleet net wrote no summary")
	}
	f := rep.FleetNet
	if f == nil {
		c.T.Fatal("fleet net wrote no fleet")
	}
	for _, h := range f.Hosts {
		if r := h.Stream; r != nil {
			c.T.Logf("%s: %s (%.0f%% of the median), on the wire %s, %+v", h.Name, metric.FormatBitRate(r.Throughput), 100*h.Share, metric.FormatBitRate(r.WireThroughput), r.TCP)
		} else {
			c.T.Logf("%s: %s", h.Name, h.Error)
		}
	}
	for _, l := range f.Links {
		c.T.Logf("link %+v", l)
	}
	if f.Start != nil {
		c.T.Logf("started together: %d hosts, median %v after the instant, skew %v", f.Start.Hosts, f.Start.MedianAfter.D(), f.Start.Skew.D())
	}
	var sum float64
	for i, p := range paths {
		h := f.Hosts[i]
		if !h.Counted() {
			c.T.Fatalf("replica %s has no figures: %s", h.Name, h.Error)
		}
		sum += h.Stream.Throughput
		if p > 0 {
			c.Within(fmt.Sprintf("replica %d's rate / its path's payload rate (%s)", i+1, metric.FormatBitRate(float64(p))), h.Stream.Throughput, vethPayload*float64(p), 0.85, 1.02,
				"tbf on its switch port holds the path to its rate; the start and the other streams' cost a little; above 1.02 would be faster than the path")
		}
	}
	c.Within("the fleet's total / the replicas' own rates, summed", f.Total.Throughput, sum, 0.99, 1.01, "issue 29: the total is the sum of the hosts' figures")
	if dead {
		h := f.Hosts[len(paths)]
		c.Expect("the address that answers nothing is reported, with no figures", h.Error != "" && h.Stream == nil, h.Error)
	}
	weakest := 0
	for i, p := range paths {
		if p < paths[weakest] {
			weakest = i
		}
	}
	if paths[weakest] > 0 && paths[weakest] < paths[(weakest+1)%len(paths)] {
		code := "fleetnet.weak_path"
		if nic == 0 {
			code = "fleetnet.slow_replica"
		}
		fd := finding(rep, code)
		named := fd != nil && strings.Contains(fd.Summary, "eplica "+to[weakest]+" received")
		for i := range paths {
			if i != weakest && fd != nil && strings.Contains(fd.Summary, to[i]+" received") {
				named = false
			}
		}
		said := "not said"
		if fd != nil {
			said = fd.Summary
		}
		c.Expect("the replica behind the 40 Mbit/s path is the one named, and only it", named, said)
	}
	if nic > 0 && paths[0] == 0 {
		wire := 0.0
		for _, h := range f.Hosts {
			if h.Counted() {
				wire += h.Stream.WireThroughput
			}
		}
		c.Within("the replicas' streams on the wire together / the primary's NIC rate", wire, float64(nic), 0.90, 1.04,
			"tbf on the primary's veth holds all it sends to its rate; each replica's rate is over its own span, and the NIC's queue (50 ms) drains to some after "+
				"others have ended, so the sum may read up to 50 ms of 3 s (1.7%) above it, no more")
		if fd := finding(rep, "fleetnet.nic_limited"); fd != nil {
			c.T.Logf("%s", fd.Summary)
		}
	}
	if fd := finding(rep, "fleetnet.even"); fd != nil {
		c.T.Logf("%s", fd.Summary)
	}
}
