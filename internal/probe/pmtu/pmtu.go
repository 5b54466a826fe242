// Package pmtu is `narrows net mtu`: what packet size the path really
// carries in each direction. It sends only on data connections of
// ordinary, authenticated round-trip tests (no ICMP, no UDP): TCP sets DF
// on every packet, so a burst of the largest segments either arrives, or
// an ICMP "packet too big" lowers the sender's path MTU and TCP resends
// smaller, or the packets vanish in silence (a black hole). In the last
// case the largest size that passes is searched for with connections
// whose MSS is clamped before their handshake (client.OpenClamped).
package pmtu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// Config is what to measure.
type Config struct {
	// Directions are result.DirUp and/or result.DirDown (default both).
	Directions []string
	// Quick only sends the full-size burst: no search when it vanishes
	// (narrows watch's periodic check).
	Quick bool
	// Floor is the least wait for a burst (default 500 ms); a probe waits
	// ten handshakes' time when that is longer.
	Floor time.Duration
}

// Burst is what a probe sends the tested way: several full-size segments
// on any path (one on loopback's 64 KiB MTU).
const Burst = 64 << 10

// Bounds of the search: IPv4's and IPv6's least MTU.
const (
	minIPv4 = 576
	minIPv6 = 1280
)

// Run measures each direction in turn on s.
func Run(ctx context.Context, s *client.Session, cfg Config) (*result.MTU, error) {
	if len(cfg.Directions) == 0 {
		cfg.Directions = result.Directions
	}
	if cfg.Floor <= 0 {
		cfg.Floor = 500 * time.Millisecond
	}
	res := &result.MTU{MTUProbing: mtuProbing()}
	if f := sysinfo.ReadFacts(s.PeerIP()); f != nil && len(f.Interfaces) == 1 {
		res.Here = result.MTUInterface{Name: f.Interfaces[0].Name, MTU: f.Interfaces[0].MTU}
	}
	if s.Facts != nil && len(s.Facts.Interfaces) == 1 {
		res.Agent = result.MTUInterface{Name: s.Facts.Interfaces[0].Name, MTU: s.Facts.Interfaces[0].MTU}
	}
	overhead, least := 40, minIPv4
	if a, err := netip.ParseAddr(s.PeerIP()); err == nil && a.Unmap().Is6() {
		res.IPv6, overhead, least = true, 60, minIPv6
	}
	p := &prober{s: s, floor: cfg.Floor, overhead: overhead}
	if most := s.Limits.MaxBlock; most > 0 && most < Burst {
		p.burst = most
	} else {
		p.burst = Burst
	}
	p.duration = 10 * time.Second
	if most := s.Limits.MaxDuration; most > 0 && most < p.duration {
		p.duration = most
	}
	for _, dir := range cfg.Directions {
		d := result.MTUDirection{Direction: dir}
		ok, pmtu, err := p.probe(ctx, dir, 0, &d)
		if err != nil {
			res.Directions = append(res.Directions, d)
			return res, err
		}
		if ok {
			// TCP's MSS negotiation holds both ends' segments to the
			// smaller interface MTU, whatever the sender's route allows.
			d.FullSize, d.KernelPMTU, d.PathMTU = true, pmtu.pmtu, natural(res.Here.MTU, res.Agent.MTU)
			if pmtu.pmtu > 0 {
				d.PathMTU = min(d.PathMTU, pmtu.pmtu)
			}
			res.Directions = append(res.Directions, d)
			continue
		}
		d.BlackHole = true
		if cfg.Quick {
			res.Directions = append(res.Directions, d)
			continue
		}
		hi := natural(res.Here.MTU, res.Agent.MTU)
		err = p.search(ctx, dir, least, hi, &d)
		res.Directions = append(res.Directions, d)
		if errors.Is(err, client.ErrNoClamp) {
			res.SearchUnavailable = errors.Unwrap(err).Error()
			continue
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// natural is the packet size a full-size segment makes: TCP's MSS
// negotiation holds both ends to the smaller interface MTU.
func natural(here, agent int) int {
	switch {
	case here > 0 && agent > 0:
		return min(here, agent)
	case here > 0:
		return here
	case agent > 0:
		return agent
	}
	return 1500
}

// search finds the largest packet that passes between least and hi (which
// failed), then confirms the edge: the largest passes again, one byte
// more vanishes again.
func (p *prober) search(ctx context.Context, dir string, least, hi int, d *result.MTUDirection) error {
	ok, _, err := p.probe(ctx, dir, least, d)
	if err != nil {
		return err
	}
	if !ok {
		d.SmallestFailed = least
		return nil // even the least MTU vanishes: no size passes
	}
	lo := least
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, _, err := p.probe(ctx, dir, mid, d)
		if err != nil {
			return err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	again, _, err := p.probe(ctx, dir, lo, d)
	if err != nil {
		return err
	}
	above, _, err := p.probe(ctx, dir, hi, d)
	if err != nil {
		return err
	}
	if again && !above {
		d.LargestPassed, d.SmallestFailed, d.PathMTU = lo, hi, lo
		return nil
	}
	// The edge moved between two looks: loss, not a size limit; say
	// what passed for sure.
	d.LargestPassed, d.SmallestFailed = lo, hi
	if again {
		d.PathMTU = lo
	}
	return nil
}

type prober struct {
	s        *client.Session
	floor    time.Duration
	overhead int // IP and TCP headers: 40 (IPv4) or 60 (IPv6)
	burst    int64
	duration time.Duration
}

// sent is what the sender's kernel says of a burst that arrived: its path
// MTU (the route's, lowered by any ICMP "packet too big").
type sent struct{ pmtu int }

// sentBy reads a sender's TCP_INFO. (Its MSS is no measure of the path:
// Linux also holds it to half the largest window the peer offered, which
// on loopback is below the MTU.)
func sentBy(ti *sysinfo.TCPInfo) sent { return sent{pmtu: int(ti.PMTU)} }

// probe sends one burst the dir way on a fresh data connection whose
// packets are at most size bytes (0: as the kernel chooses), and says
// whether it arrived in time and, if so, what the sender's kernel says.
func (p *prober) probe(ctx context.Context, dir string, size int, d *result.MTUDirection) (bool, sent, error) {
	spec := wire.TestSpec{Kind: wire.KindRR, Duration: p.duration, Interval: p.duration, Request: p.burst, Response: 1}
	if dir == result.DirDown {
		spec.Request, spec.Response = 1, p.burst
	}
	var t *client.Test
	var err error
	if size > 0 {
		t, err = p.s.OpenClamped(ctx, spec, size-p.overhead)
	} else {
		t, err = p.s.Open(ctx, spec)
	}
	if err != nil {
		return false, sent{}, fmt.Errorf("mtu: %w", err)
	}
	defer t.Close()
	d.Probes++
	dc := t.Conns[0]
	tc, ok := dc.Conn.(*net.TCPConn)
	if !ok {
		return false, sent{}, errors.New("mtu: the data connection is not TCP")
	}
	wait := max(p.floor, 10*dc.ConnectTime)
	d.Timeout = result.Seconds(wait)
	if err := t.Start(ctx); err != nil {
		return false, sent{}, err
	}
	tc.SetDeadline(time.Now().Add(wait))
	_, err = tc.Write(make([]byte, spec.Request))
	if err == nil {
		_, err = io.ReadFull(tc, make([]byte, spec.Response))
	}
	passed := err == nil
	var ne net.Error
	if !passed && !(errors.As(err, &ne) && ne.Timeout()) {
		return false, sent{}, fmt.Errorf("mtu: probe of %d bytes %s: %w", size, dir, err)
	}
	var by sent
	if passed && dir == result.DirUp {
		if rc, err := tc.SyscallConn(); err == nil {
			if ti, err := sysinfo.ReadTCPInfo(rc); err == nil {
				by = sentBy(ti)
			}
		}
	}
	if passed {
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		tc.CloseWrite() // the agent's echo ends at our EOF
	} else {
		// The burst is stuck in retransmission: reset the connection (the
		// RST is small, it passes) and end the agent's test.
		t.Stop("probe timed out")
		tc.SetLinger(0)
		tc.Close()
	}
	done, err := finish(t)
	if err != nil {
		return false, sent{}, err
	}
	if passed && dir == result.DirDown && len(done.Slots) == 1 && done.Slots[0].TCP != nil {
		by = sentBy(done.Slots[0].TCP)
	}
	return passed, by, nil
}

// finish reads the agent's reports until its Done, so the session is
// ready for the next probe.
func finish(t *client.Test) (*wire.Done, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		x, err := t.Next(deadline)
		if err != nil {
			return nil, fmt.Errorf("mtu: waiting for the agent to end a probe: %w", err)
		}
		if d, ok := x.(*wire.Done); ok {
			return d, nil
		}
	}
}

// mtuProbing reads net.ipv4.tcp_mtu_probing (-1 where there is none).
func mtuProbing() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_mtu_probing")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}
