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
	tuns  [2]int        // TUN descriptors in A and in B; -1 when not open
	fwds  [2]*forwarder // A→B, B→A
	procs int           // Ps this line added (procs_linux.go)
}

// NewDelayLine creates two namespaces narrows-<pid>-<n>-a and -b, a TUN
// device in each ("tun-a", "tun-b") with the point-to-point addresses
// 198.18.<n>.1 and .2 (each the other's peer), and starts the forwarder
// that carries packets between them shaped as opts says. It first calls
// CleanupStale. On error nothing is left behind.
//
// The forwarder runs in this process: the link exists as long as it does.
// When the process dies the kernel removes the TUN devices with their
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
	base := time.Now()
	addThreads(2)
	l.impl.procs = 2
	for i, p := range []*Path{o.AtoB, o.BtoA} {
		name := [2]string{"A→B", "B→A"}[i]
		fw, err := newForwarder(name, l.impl.tuns[i], l.impl.tuns[1-i], newShaper(*p, o.Seed, uint64(i+1)), base, o.MTU, o.MaxHeld, !o.NoRealtime)
		if err != nil {
			return err
		}
		l.impl.fwds[i] = fw
		fw.start()
	}
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
	var s DelayLineStats
	if f := l.impl.fwds[0]; f != nil {
		s.AtoB, _ = f.snapshot()
	}
	if f := l.impl.fwds[1]; f != nil {
		s.BtoA, _ = f.snapshot()
	}
	return s
}

// Realtime reports whether both directions' threads run at real-time
// priority (see DelayLineOptions.NoRealtime).
func (l *DelayLine) Realtime() bool {
	for _, f := range l.impl.fwds {
		if f == nil || !f.rt.Load() {
			return false
		}
	}
	return true
}

// Awake reports whether the CPUs are held awake while this line exists (a
// CPU latency request of 0 µs, see procs_linux.go), or why not: without it,
// on a virtual machine, packets leave tens of microseconds to milliseconds
// late whenever a CPU was idle.
func (l *DelayLine) Awake() error {
	if err := cpuLatencyHeld(); err != nil {
		return fmt.Errorf("testbed: CPU latency request (%s) not held: %w", cpuLatencyDev, err)
	}
	return nil
}

// Err returns each direction's first I/O error, if any: a read error
// stops that direction, a write error loses that one packet (counted in
// PathStats.WriteErrors). A line that returns nil here has carried every
// packet it was given, apart from those its options drop.
func (l *DelayLine) Err() error {
	var errs []error
	for _, f := range l.impl.fwds {
		if f != nil {
			if _, err := f.snapshot(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close stops the forwarder, closes the TUN devices (which removes them)
// and deletes both namespaces. It is idempotent: later calls return the
// first call's result.
func (l *DelayLine) Close() error {
	l.closeOnce.Do(func() {
		var errs []error
		for _, f := range l.impl.fwds {
			if f != nil {
				f.stop()
			}
		}
		if l.impl.procs > 0 {
			addThreads(-l.impl.procs)
		}
		for i, fd := range l.impl.tuns {
			if fd >= 0 {
				if err := unix.Close(fd); err != nil {
					errs = append(errs, fmt.Errorf("testbed: closing %s: %w", l.Hosts()[i].Dev, err))
				}
			}
		}
		for _, h := range l.Hosts() {
			if err := deleteNS(h.NS); err != nil {
				errs = append(errs, err)
			}
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}
