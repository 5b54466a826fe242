//go:build linux

package testbed

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
)

// NewSwitch creates a switch's namespace narrows-<pid>-<n>-sw with a
// bridge, and opts.Hosts namespaces narrows-<pid>-<n>-h<i> on it at
// 198.18.<n>.<i+1>/24, each shaped as opts say (tbf, as NewLink shapes a
// veth). It first calls CleanupStale. On error nothing is left behind.
func NewSwitch(ctx context.Context, opts SwitchOptions) (*Switch, error) {
	if opts.Hosts < 2 || opts.Hosts > 32 {
		return nil, fmt.Errorf("testbed: a switch joins 2 to 32 hosts, not %d", opts.Hosts)
	}
	if opts.QueueLatency == 0 {
		opts.QueueLatency = DefaultQueueLatency
	}
	if err := Available(); err != nil {
		return nil, err
	}
	if err := CleanupStale(); err != nil {
		return nil, err
	}
	n := linkSeq.Add(1)
	sub := n % 512
	base := netip.AddrFrom4([4]byte{198, 18 + byte(sub/256), byte(sub % 256), 0})
	name := fmt.Sprintf("%s%d-%d", NamePrefix, os.Getpid(), n)
	s := &Switch{Options: opts, Bridge: name + "-sw", Prefix: netip.PrefixFrom(base, 24)}
	for i := range opts.Hosts {
		b := base.As4()
		b[3] = byte(i + 1)
		s.Hosts = append(s.Hosts, &Host{Name: "h" + strconv.Itoa(i), NS: fmt.Sprintf("%s-h%d", name, i), Addr: netip.AddrFrom4(b), Dev: "eth0"})
	}
	if err := s.setup(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

func (s *Switch) setup(ctx context.Context) error {
	o := s.Options
	tbf := func(ns, dev string, rate int64) []string {
		return []string{"tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", strconv.FormatInt(rate, 10) + "bit",
			"burst", strconv.FormatInt(DefaultBurst(rate, DefaultMTU), 10), "latency", strconv.FormatInt(o.QueueLatency.Microseconds(), 10) + "us"}
	}
	steps := [][]string{
		{"ip", "netns", "add", s.Bridge},
		{"ip", "-n", s.Bridge, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", s.Bridge, "link", "set", "br0", "up"},
	}
	for i, h := range s.Hosts {
		port := "p" + strconv.Itoa(i)
		steps = append(steps,
			[]string{"ip", "netns", "add", h.NS},
			[]string{"ip", "link", "add", port, "netns", s.Bridge, "type", "veth", "peer", "name", h.Dev, "netns", h.NS},
			[]string{"ip", "-n", s.Bridge, "link", "set", port, "master", "br0"},
			[]string{"ip", "-n", h.NS, "link", "set", "lo", "up"},
			[]string{"ip", "-n", h.NS, "addr", "add", netip.PrefixFrom(h.Addr, 24).String(), "dev", h.Dev})
		if r := portRate(o.ToHost, i); r > 0 {
			steps = append(steps, tbf(s.Bridge, port, r))
		}
		if r := portRate(o.FromHost, i); r > 0 {
			steps = append(steps, tbf(h.NS, h.Dev, r))
		}
		steps = append(steps, []string{"ip", "-n", s.Bridge, "link", "set", port, "up"}, []string{"ip", "-n", h.NS, "link", "set", h.Dev, "up"})
	}
	for _, st := range steps {
		if _, err := run(ctx, st[0], st[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// teardown deletes every namespace of the switch, for Close.
func (s *Switch) teardown() error {
	var errs []error
	for _, h := range s.Hosts {
		errs = append(errs, deleteNS(h.NS))
	}
	return errors.Join(append(errs, deleteNS(s.Bridge))...)
}
