package command

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/fleet"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// FleetNet is `narrows fleet net`: Stream.Streams streams from this host
// to every agent To names at once, as a primary ships its log to each
// replica (one stream per database per replica), started together.
type FleetNet struct {
	To     []client.Options
	Names  []string // as given, one per To
	Stream stream.Config
	// NICRate is this host's link rate given by hand (--assume nic=RATE),
	// bits per second on the wire; 0: the NIC's own, where it tells one.
	NICRate float64
}

// MaxFleetStreams bounds the streams of one fleet net run, all hosts'
// together: each sender blocked on a full link holds a thread of this
// process (netio), and Go allows 10,000.
const MaxFleetStreams = 4096

// Run connects to every host (fleetDials at a time), sends the streams
// to those that answered and can take them, and reports every host.
func (c FleetNet) Run(ctx context.Context, env Env) (*result.Report, error) {
	cfg := c.Stream
	cfg.Direction = wire.Forward
	switch {
	case len(c.To) == 0 || len(c.To) > MaxFleet:
		return nil, errext.Userf(nil, "--to names %d hosts: a fleet run takes 1 to %d", len(c.To), MaxFleet)
	case cfg.Streams < 1 || len(c.To)*cfg.Streams > MaxFleetStreams:
		return nil, errext.Userf(nil, "--streams-per-host %d to %s: a fleet run takes 1 to %d streams in all",
			cfg.Streams, metric.Plural(int64(len(c.To)), "host"), MaxFleetStreams)
	case cfg.Duration <= 0 || cfg.Block <= 0:
		return nil, errext.Userf(nil, "give a duration and a block size")
	}
	// Each agent reports every second (the run's account is kept, not
	// its intervals).
	cfg.Interval = min(time.Second, cfg.Duration)
	targets := connectFleet(ctx, c.To, c.Names, func(s *client.Session, addr string) (string, error) {
		return "", streamFits(s, addr, cfg, "--streams-per-host")
	})
	defer closeFleet(targets)
	up := 0
	var peers []string // an address of each host that answered, for the facts of the interfaces routing to them
	for _, t := range targets {
		if t.Sess != nil {
			up++
			peers = append(peers, t.Sess.PeerIP())
		}
	}
	rep := result.NewReport("fleet net", fmt.Sprintf("%d hosts", len(targets)), env.Tool, env.now())
	per := "1 stream"
	if cfg.Streams > 1 {
		per = fmt.Sprintf("%d streams", cfg.Streams)
	}
	env.say(fmt.Sprintf("narrows fleet net → %d of %s: %s to each from this host, %s, %s blocks, started together",
		up, metric.Plural(int64(len(targets)), "host"), per, metric.FlagDuration(cfg.Duration), metric.FormatBytes(cfg.Block)))
	res := fleet.Net(ctx, targets, fleet.NetConfig{Stream: cfg})
	rep.FleetNet = res
	rep.Facts = linkFacts(env.Tool, res, targets, peers)
	fleet.Rates(res, rep.Facts.Interfaces, c.NICRate)
	var runErr error
	if res.Total.Hosts == 0 {
		runErr = fmt.Errorf("no host of the fleet received its streams: each host's row says why (an agent not reachable, refusing, or failing)")
	}
	var names, errs []string
	for _, h := range res.Hosts {
		names, errs = append(names, h.Name), append(errs, h.Error)
	}
	return finishFleet(ctx, env.Tool, rep, runErr, names, errs)
}

// linkFacts are this host's facts, with every interface the counted
// hosts' streams left by: the one routing to the first that answered,
// and the others' (replicas reached by different routes) added.
func linkFacts(tool result.Tool, res *result.FleetNet, targets []fleet.Target, peers []string) *result.Facts {
	first := ""
	if len(peers) > 0 {
		first = peers[0]
	}
	f := hostFacts(tool, first)
	have := func(dev string) bool {
		return slices.ContainsFunc(f.Interfaces, func(n result.NIC) bool { return n.Name == dev })
	}
	for i, h := range res.Hosts {
		if !h.Counted() || h.Interface == "" || have(h.Interface) || targets[i].Sess == nil {
			continue
		}
		for _, n := range hostFacts(tool, targets[i].Sess.PeerIP()).Interfaces {
			if n.Name == h.Interface {
				f.Interfaces = append(f.Interfaces, n)
			}
		}
	}
	return f
}
