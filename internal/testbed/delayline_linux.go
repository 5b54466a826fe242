//go:build linux

package testbed

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// TUN device names inside the two namespaces.
const (
	tunA = "tun-a"
	tunB = "tun-b"
)

// tunTxQueueLen is the TUN devices' transmit ring, in packets. The kernel
// drops what does not fit there before the forwarder sees it, so it is
// well above the default 500 to absorb the bursts of several TCP streams
// while the reader is descheduled on a busy machine.
const tunTxQueueLen = 4096

type delayLineImpl struct {
	tuns [2]int   // TUN descriptors in A and in B; -1 when not open
	fwd  *fwdProc // the forwarder process (fwdproc_linux.go)
}

// NewDelayLine creates two namespaces narrows-<pid>-<n>-a and -b, a TUN
// device in each ("tun-a", "tun-b") with the point-to-point addresses
// 198.18.<n>.1 and .2 (each the other's peer), and starts the forwarder
// that carries packets between them shaped as opts says. It first calls
// CleanupStale. On error nothing is left behind.
//
// The forwarder runs in a child process (fwdproc_linux.go) that ends with
// Close or with this process: the link exists as long as this process
// does. When both are gone the kernel removes the TUN devices with their
// files, and CleanupStale (of any later run) removes the namespaces.
func NewDelayLine(ctx context.Context, opts DelayLineOptions) (*DelayLine, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := DelayLineAvailable(); err != nil {
		return nil, err
	}
	if err := CleanupStale(); err != nil {
		return nil, err
	}
	a, b, prefix := newHostPair(linkSeq.Add(1), tunA, tunB)
	l := &DelayLine{A: a, B: b, Options: opts, Prefix: prefix}
	l.impl.tuns = [2]int{-1, -1}
	if err := l.setup(ctx); err != nil {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return l, nil
}

func (l *DelayLine) setup(ctx context.Context) error {
	o := l.Options
	for _, h := range l.Hosts() {
		if _, err := run(ctx, "ip", "netns", "add", h.NS); err != nil {
			return err
		}
	}
	for i, h := range l.Hosts() {
		fd, err := openTUN(h, h.Dev)
		if err != nil {
			return err
		}
		l.impl.tuns[i] = fd
	}
	fwd, err := startForwarders(l.impl.tuns, fwdConfig{Paths: [2]Path{*o.AtoB, *o.BtoA}, Seed: o.Seed, MTU: o.MTU,
		MaxHeld: o.MaxHeld, Realtime: !o.NoRealtime, LetCPUsSleep: o.LetCPUsSleep}, 10*time.Second)
	if err != nil {
		return err
	}
	l.impl.fwd = fwd
	for _, h := range l.Hosts() {
		peer := l.B.Addr
		if h == l.B {
			peer = l.A.Addr
		}
		steps := [][]string{
			{"ip", "-n", h.NS, "link", "set", "lo", "up"},
			{"ip", "-n", h.NS, "link", "set", h.Dev, "mtu", strconv.Itoa(o.MTU), "txqueuelen", strconv.Itoa(tunTxQueueLen)},
			{"ip", "-n", h.NS, "addr", "add", h.Addr.String(), "peer", peer.String(), "dev", h.Dev},
			{"ip", "-n", h.NS, "link", "set", h.Dev, "up"},
		}
		for _, s := range steps {
			if _, err := run(ctx, s[0], s[1:]...); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stats returns what each direction has done so far.
func (l *DelayLine) Stats() DelayLineStats {
	if l.impl.fwd == nil {
		return DelayLineStats{}
	}
	return DelayLineStats{AtoB: l.impl.fwd.stats(0), BtoA: l.impl.fwd.stats(1)}
}

// Realtime reports whether the forwarder runs at real-time priority, every
// thread of its process (see DelayLineOptions.NoRealtime).
func (l *DelayLine) Realtime() bool {
	if l.impl.fwd == nil {
		return false
	}
	rt, _ := l.impl.fwd.state()
	return rt
}

// Awake reports whether the CPUs are held awake while this line exists (a
// CPU latency request of 0 µs, see procs_linux.go), or why not: without it,
// on a virtual machine, packets leave tens of microseconds to milliseconds
// late whenever a CPU was idle.
func (l *DelayLine) Awake() error {
	if l.impl.fwd == nil {
		return errors.New("testbed: no forwarder")
	}
	_, awake := l.impl.fwd.state()
	return awake
}

// Err returns each direction's first I/O error, if any: a read error
// stops that direction, a write error loses that one packet (counted in
// PathStats.WriteErrors). A line that returns nil here has carried every
// packet it was given, apart from those its options drop.
func (l *DelayLine) Err() error {
	if l.impl.fwd == nil {
		return nil
	}
	return errors.Join(l.impl.fwd.err(0), l.impl.fwd.err(1))
}

// close stops the forwarder, closes the TUN devices (which removes them)
// and deletes the namespaces of hosts (A and B), for DelayLine.Close.
func (d *delayLineImpl) close(hosts []*Host) error {
	var errs []error
	if d.fwd != nil {
		d.fwd.stop()
	}
	for i, fd := range d.tuns {
		if fd >= 0 {
			if err := unix.Close(fd); err != nil {
				errs = append(errs, fmt.Errorf("testbed: closing %s: %w", hosts[i].Dev, err))
			}
		}
	}
	for _, h := range hosts {
		if err := deleteNS(h.NS); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
