package fleet

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/invariants"
	"github.com/narrows/narrows/internal/result"
)

// TestNetVerdicts holds a fleet's figures (each host's rate, this host's
// link) to what is said of them: a replica far below the median is
// pinned on its path only where this host's link had room and its rate
// is known; where the rate is not known, or the link was full, it is
// named and what cannot be told is said; a full link is named as the
// limit; a host that failed is named and not counted.
func TestNetVerdicts(t *testing.T) {
	const M = 1e6
	phys := result.NIC{Name: "eth0", Driver: "ixgbe", SpeedMbps: 1000}
	veth := result.NIC{Name: "eth0", Driver: "veth", SpeedMbps: 10000}
	cases := []struct {
		name    string
		rates   []float64 // each host's, Mbit/s; < 0: failed
		nic     result.NIC
		assumed float64
		same    bool
		say     []string
		notSay  []string
		words   string // in the first finding said
	}{
		{"weak path, link with room", []float64{190, 190, 190, 50}, phys, 0, false,
			[]string{"fleetnet.weak_path"}, []string{"fleetnet.even", "fleetnet.slow_replica", "fleetnet.nic_limited"},
			"Replica h3 received the log at 26% of the median replica's rate"},
		{"slow replica, a virtual NIC", []float64{190, 190, 190, 50}, veth, 0, false,
			[]string{"fleetnet.slow_replica"}, []string{"fleetnet.even", "fleetnet.weak_path", "fleetnet.nic_limited"},
			"this host's link rate is not known: eth0 is a virtual interface inside this host (veth)"},
		{"weak path, the rate given", []float64{190, 190, 190, 50}, veth, 1000 * M, false,
			[]string{"fleetnet.weak_path"}, []string{"fleetnet.even", "fleetnet.slow_replica", "fleetnet.nic_limited"},
			"65% of its 1 Gbit/s, as given by --assume nic"},
		{"the link full, even", []float64{235, 236, 234, 236}, phys, 0, false,
			[]string{"fleetnet.nic_limited", "fleetnet.even"}, []string{"fleetnet.weak_path", "fleetnet.slow_replica"},
			"eth0 carried 984 Mbit/s on the wire, 98% of its 1 Gbit/s"},
		{"the link full, one far below", []float64{290, 290, 290, 70}, phys, 0, false,
			[]string{"fleetnet.nic_limited", "fleetnet.slow_replica"}, []string{"fleetnet.weak_path", "fleetnet.even"},
			"this host's NIC, not their paths, was the limit"},
		{"even, a virtual NIC", []float64{100, 95, 105}, veth, 0, false,
			[]string{"fleetnet.even"}, []string{"fleetnet.weak_path", "fleetnet.slow_replica", "fleetnet.nic_limited", "fleet.host_failed"},
			"each of 3 received the log at 80–125%"},
		{"a host failed", []float64{100, -1, 95, 105}, veth, 0, false,
			[]string{"fleet.host_failed", "fleetnet.even"}, []string{"fleetnet.weak_path", "fleetnet.slow_replica"},
			"1 host of 4 gave no figures"},
		{"on this machine", []float64{9000, 9000, 3000}, result.NIC{Name: "lo"}, 1000 * M, true,
			[]string{"fleetnet.slow_replica"}, []string{"fleetnet.weak_path", "fleetnet.nic_limited", "fleetnet.even"},
			"the agents are on this machine"},
		{"one replica: no spread", []float64{50}, phys, 0, false,
			nil, []string{"fleetnet.weak_path", "fleetnet.slow_replica", "fleetnet.even", "fleetnet.nic_limited"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &result.FleetNet{Config: result.FleetNetConfig{Hosts: len(c.rates), StreamsPerHost: 1}}
			for i, r := range c.rates {
				h := result.FleetNetHost{Name: "h" + string(rune('0'+i)), Interface: c.nic.Name, SameHost: c.same}
				if r < 0 {
					h.Error = "connection refused"
				} else {
					h.Stream = &result.StreamRun{Streams: 1, Throughput: r * M, WireThroughput: r * M * 1514 / 1448, SentBytes: 1, ReceivedBytes: 1}
				}
				res.Hosts = append(res.Hosts, h)
			}
			total(res)
			Rates(res, []result.NIC{c.nic}, c.assumed)
			rep := result.NewReport("fleet net", "4 hosts", result.Tool{}, testTime)
			rep.FleetNet = res
			rep.Findings = advisor.Advise(rep)
			var said []string
			for _, f := range rep.Findings {
				said = append(said, f.Code)
				t.Logf("%s: %s", f.Code, f.Summary)
			}
			for _, code := range c.say {
				if !slices.Contains(said, code) {
					t.Errorf("did not say %s: %v", code, rep.Findings)
				}
			}
			for _, code := range c.notSay {
				if slices.Contains(said, code) {
					t.Errorf("said %s: %v", code, rep.Findings)
				}
			}
			if c.words != "" && !slices.ContainsFunc(rep.Findings, func(f result.Finding) bool { return strings.Contains(f.Summary, c.words) }) {
				t.Errorf("no finding says %q: %v", c.words, rep.Findings)
			}
			var sum float64
			for _, h := range res.Hosts {
				if h.Counted() {
					sum += h.Stream.Throughput
				}
			}
			if math.Abs(res.Total.Throughput-sum) > 1 {
				t.Errorf("total %g, the hosts' %g", res.Total.Throughput, sum)
			}
			for _, v := range invariants.Check(rep, nil, invariants.Path{}) {
				t.Errorf("invariant: %s", v)
			}
		})
	}
}

var testTime = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

// TestBarrierPatience: with patience, the hosts that arrived go when it
// has passed since the first arrived, though one has not; that one,
// arriving after, is told it is late; hosts that leave count as gone.
// Without patience (fleet disk's), the barrier waits for every host.
func TestBarrierPatience(t *testing.T) {
	b := newBarrier(3, 0, 50*time.Millisecond)
	b.leave() // a host whose streams could not open
	t0 := time.Now()
	at, ok := b.arrive()
	if !ok || at.IsZero() || time.Since(t0) < 50*time.Millisecond {
		t.Fatalf("the first host went at %v after %v (ok %v): it waits its patience for the third", at, time.Since(t0), ok)
	}
	if _, ok := b.arrive(); ok {
		t.Error("a host arriving after the others went is not told it is late")
	}

	b = newBarrier(2, 0, 0)
	went := make(chan bool)
	go func() { _, ok := b.arrive(); went <- ok }()
	select {
	case <-went:
		t.Fatal("without patience the first host went before the second arrived")
	case <-time.After(100 * time.Millisecond):
	}
	if _, ok := b.arrive(); !ok || !<-went {
		t.Error("both hosts arrived and did not both go")
	}
}
