package fleet

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// NetConfig is the fleet's streams: the same on every host.
type NetConfig struct {
	// Stream is each host's: Streams at once, forward (this host sends),
	// for Duration.
	Stream stream.Config
	// Patience is how long the hosts ready first wait for the others'
	// data connections (default DefaultPatience): an agent waits for a
	// test's start no longer than its --handshake-timeout (10 s unless
	// its operator says otherwise) from when it accepted the test.
	Patience time.Duration
}

// DefaultPatience is half an agent's default --handshake-timeout.
const DefaultPatience = 5 * time.Second

// Net sends cfg's streams from this host to every target that has a
// session, as a primary ships its log to every replica: each host's data
// connections opened, then all started at once by this host (it sends,
// so no agent's clock comes into it: the start is when this host sends
// each its Start and begins writing). A host that fails, or is not ready
// within cfg.Patience of the first, is reported and does not stop the
// others; its session is closed at once, so that its agent frees the
// test. Each host's account is kept, not its intervals.
func Net(ctx context.Context, targets []Target, cfg NetConfig) *result.FleetNet {
	sc := cfg.Stream
	res := &result.FleetNet{Config: result.FleetNetConfig{Hosts: len(targets), StreamsPerHost: sc.Streams, Direction: wire.Forward,
		Duration: result.Seconds(sc.Duration), BlockBytes: sc.Block, WindowBytes: sc.Window}}
	res.Hosts = make([]result.FleetNetHost, len(targets))
	live := 0
	for i, t := range targets {
		res.Hosts[i].Name, res.Hosts[i].Error = t.Name, t.Error
		if t.Sess != nil {
			res.Hosts[i].Addr = t.Sess.Addr()
			live++
		}
	}
	patience := cmp.Or(cfg.Patience, DefaultPatience)
	b := newBarrier(live, 0, patience)
	runs := make([]*stream.HeldRun, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		if t.Sess == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			arrived := false
			run, err := stream.Held(ctx, t.Sess, sc, func() error {
				arrived = true
				if _, ok := b.arrive(); !ok {
					return fmt.Errorf("its data connections were not open within %s of the first host's: the others started without it", patience)
				}
				return nil
			})
			if !arrived {
				b.leave()
			}
			runs[i] = run
			if err != nil {
				res.Hosts[i].Error = err.Error()
				// Its state is not known: the agent frees the test when
				// the session closes.
				t.Sess.Close()
			}
		}()
	}
	wg.Wait()
	instant := b.instant()
	var after []float64
	for i, r := range runs {
		h := &res.Hosts[i]
		if r == nil {
			continue
		}
		h.Interface, h.SameHost, h.Stream = r.Interface, r.SameHost, r.Run
		if !r.Started.IsZero() && !instant.IsZero() {
			a := result.Seconds(r.Started.Sub(instant))
			h.StartedAfter = &a
			after = append(after, float64(a))
		}
	}
	res.Start = startOf(after)
	total(res)
	return res
}

// total sums the counted hosts, each link's and all, and gives each
// counted host its share of the median's rate. A host's wire figure
// missing (no TCP state at this end: Windows before 1703) counts its
// payload, a lower bound.
func total(res *result.FleetNet) {
	t := &res.Total
	var rates []float64
	links := map[string]*result.FleetNetLink{}
	for _, h := range res.Hosts {
		if !h.Counted() {
			continue
		}
		r := h.Stream
		t.Hosts++
		t.Streams += r.Streams
		t.Throughput += r.Throughput
		wire := cmp.Or(r.WireThroughput, r.Throughput)
		t.WireThroughput += wire
		rates = append(rates, r.Throughput)
		l := links[h.Interface]
		if l == nil {
			l = &result.FleetNetLink{Interface: h.Interface, SameHost: true}
			links[h.Interface] = l
		}
		l.SameHost = l.SameHost && h.SameHost
		l.Hosts++
		l.Throughput += r.Throughput
		l.WireThroughput += wire
	}
	if len(rates) == 0 {
		return
	}
	t.MedianHost = metric.Median(rates)
	t.Slowest, t.Fastest = slices.Min(rates), slices.Max(rates)
	if t.MedianHost > 0 {
		for i := range res.Hosts {
			if h := &res.Hosts[i]; h.Counted() {
				h.Share = h.Stream.Throughput / t.MedianHost
			}
		}
	}
	for _, l := range links {
		res.Links = append(res.Links, *l)
	}
	slices.SortFunc(res.Links, func(a, b result.FleetNetLink) int { return cmp.Compare(a.Interface, b.Interface) })
}

// Rates gives each link of res its rate: as given by hand (assumed, bits
// per second on the wire, every link's), else its NIC's speed where that
// is a physical port's (nics: this host's facts), else none, saying why;
// and the share of it the streams used. A link whose agents are all on
// this machine has none: no NIC carried them.
func Rates(res *result.FleetNet, nics []result.NIC, assumed float64) {
	res.Config.AssumedNICRate = assumed
	for i := range res.Links {
		l := &res.Links[i]
		var nic *result.NIC
		for j := range nics {
			if nics[j].Name == l.Interface {
				nic = &nics[j]
			}
		}
		if nic != nil {
			l.Driver, l.Speed = nic.Driver, float64(nic.SpeedMbps)*1e6
		}
		switch {
		case l.SameHost:
			l.RateUnknown = "the agents are on this machine: no NIC carried their streams"
		case assumed > 0:
			l.Rate, l.RateFrom = assumed, result.RateFromAssumed
		case nic != nil && nic.SpeedIsLimit():
			l.Rate, l.RateFrom = l.Speed, result.RateFromNIC
		case l.Interface == "":
			l.RateUnknown = "no interface of this host holds the streams' address"
		case nic == nil:
			l.RateUnknown = l.Interface + " was not described (this host's facts name other interfaces)"
		case nic.SpeedMbps <= 0:
			l.RateUnknown = l.Interface + "'s driver reports no speed (" + cmp.Or(nic.Driver, "a driver not named") + ")"
		default:
			l.RateUnknown = fmt.Sprintf("%s is %s: the %s its driver reports is no limit",
				l.Interface, virtualWords(nic.Driver), metric.FormatBitRate(l.Speed))
		}
		if l.Rate > 0 {
			l.Share = l.WireThroughput / l.Rate
		}
	}
}

// virtualWords names a virtual interface's kind, for why its speed is no
// limit.
func virtualWords(driver string) string {
	switch driver {
	case "veth", "bridge", "dummy", "macvlan", "ipvlan", "vxlan", "openvswitch":
		return "a virtual interface inside this host (" + driver + ")"
	case "tun", "wireguard":
		return "a tunnel (" + driver + ")"
	}
	return "a paravirtual NIC (" + driver + "), whose real rate is the hypervisor's or the cloud's allowance"
}
