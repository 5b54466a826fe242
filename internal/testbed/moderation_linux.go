//go:build linux

package testbed

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/sysinfo"
)

// rxCoalescing reads a TUN device's interrupt coalescing as the kernel
// keeps it, for Path.Moderation: rx-frames (the TUN driver's rx_batched,
// the only field it keeps), set from outside with `ethtool -C` or by
// narrows' agent through SIOCETHTOOL.
//
// The device is in its host's namespace and the forwarder process need not
// be: SIOCETHTOOL names the device, and the name is looked up in the
// namespace of the socket the ioctl is made on. So the socket is opened
// once inside the device's namespace (TUNGETDEVNETNS on the device's
// descriptor gives it, Linux 5.2 and later), on a locked thread that
// enters it and comes back, and used for every read.
//
// It is polled every rxPollEvery by a goroutine of its own (rxPoller),
// not on a forwarder's thread: the ethtool ioctl takes the RTNL lock,
// which `ip` and namespace creation and teardown hold for milliseconds at
// a time, and a delivery must not wait on that. The forwarder reads the
// last value (an atomic load). One read took 0.8-0.9 µs on this project's
// 2-core VM with nothing holding RTNL (TestDelayLineModeration's log).
type rxCoalescing struct {
	sock   int    // AF_INET datagram socket in the device's namespace
	dev    string // the device's name there
	frames atomic.Int32
	reads  atomic.Int64 // reads made
	failed atomic.Pointer[error]
	poller *rxPoller
	// stale: frames was read before the poller's last rest, and may be
	// out of date; the next refresh clears it.
	stale atomic.Bool
}

// rxPollEvery is how often the setting is read: a change is followed
// within about this (Go's timers are coarse: 2-3 ms).
const rxPollEvery = 2 * time.Millisecond

// openRxCoalescing opens what reads the coalescing of the TUN device tun
// is a descriptor of, and reads it once.
func openRxCoalescing(tun int) (*rxCoalescing, error) {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlIfreq(tun, unix.TUNGETIFF, ifr); err != nil {
		return nil, fmt.Errorf("testbed: TUNGETIFF: %w", err)
	}
	dev := ifr.Name()
	nsfd, err := unix.IoctlRetInt(tun, unix.TUNGETDEVNETNS) // _IO('T', 227)
	if err != nil {
		return nil, fmt.Errorf("testbed: %s: TUNGETDEVNETNS (Linux 5.2 or later): %w", dev, err)
	}
	defer unix.Close(nsfd)
	sock, err := socketInNetNS(nsfd)
	if err != nil {
		return nil, fmt.Errorf("testbed: %s: a socket in its namespace: %w", dev, err)
	}
	c := &rxCoalescing{sock: sock, dev: dev}
	n, err := c.read()
	if err != nil {
		unix.Close(sock)
		return nil, fmt.Errorf("testbed: %s: reading its interrupt coalescing: %w", dev, err)
	}
	c.frames.Store(int32(n))
	return c, nil
}

// socketInNetNS opens an AF_INET datagram socket in the network namespace
// nsfd refers to, on a thread that enters it and comes back (a thread
// that cannot come back dies with its goroutine, still locked).
func socketInNetNS(nsfd int) (int, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, err}
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("setns: %w", err)}
			return
		}
		fd, serr := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			if serr == nil {
				unix.Close(fd)
			}
			ch <- result{-1, fmt.Errorf("setns back: %w", err)} // stays locked: the thread ends
			return
		}
		runtime.UnlockOSThread()
		ch <- result{fd, serr}
	}()
	r := <-ch
	return r.fd, r.err
}

// read returns the device's rx-frames now (ETHTOOL_GCOALESCE).
func (c *rxCoalescing) read() (int, error) {
	ec, err := sysinfo.CoalescingOn(c.sock, c.dev)
	if err != nil {
		return 0, err
	}
	c.reads.Add(1)
	return int(min(ec.RxFrames, 1<<16)), nil
}

// rxPoller reads the setting of each of its devices every rxPollEvery
// while the line carries packets, and not at all once it has carried none
// for rxIdleAfter: every wake-up of a Go goroutine (a Ticker's, or a
// nanosleep on a locked thread alike) cost the forwarder process about
// 40 µs of CPU in the runtime's scheduler and sysmon, not in the ioctl
// (0.7-0.9 µs), so polling two devices every 2 ms kept it at 20-34 ms of
// CPU a second at rest (2-3% of a core, at real-time priority) where a
// line without moderation takes none. While the line carries packets it
// still does (18-30 ms a second, TestDelayLineModeration's log). At rest it blocks on an eventfd; the
// forwarder that reads the first packet after the silence wakes it, and
// each forwarder reads its own device's setting itself on its first
// packet after a rest, before delivering anything (rxCoalescing.use), so
// no packet is delivered by a value older than the last rxPollEvery of
// traffic. That one read is on the forwarder's thread, and may wait on
// RTNL: once a direction after each second of silence.
type rxPoller struct {
	rxs      []*rxCoalescing
	base     time.Time    // the forwarders' clock
	lastUse  atomic.Int64 // when a forwarder last read a packet, since base
	active   atomic.Bool  // polling; false: blocked on efd
	efd      int          // the forwarders' nudge out of rest
	stop     atomic.Bool
	done     chan struct{}
	sleeping atomic.Int64 // times it went to rest (for tests' logs)
}

// rxIdleAfter is how long the line carries nothing before the poller
// rests.
const rxIdleAfter = time.Second

func startRxPoller(rxs []*rxCoalescing, base time.Time) (*rxPoller, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("testbed: eventfd: %w", err)
	}
	p := &rxPoller{rxs: rxs, base: base, efd: efd, done: make(chan struct{})}
	p.active.Store(true)
	p.lastUse.Store(int64(time.Since(base)))
	for _, c := range rxs {
		c.poller = p
	}
	go p.run()
	return p, nil
}

// run reads until close. A read that fails (the device going away as the
// line closes) keeps the last value; the first failure is kept for err.
func (p *rxPoller) run() {
	defer close(p.done)
	var buf [8]byte
	tick := time.NewTicker(rxPollEvery)
	defer tick.Stop()
	for !p.stop.Load() {
		<-tick.C
		for _, c := range p.rxs {
			c.refresh()
		}
		if time.Since(p.base)-time.Duration(p.lastUse.Load()) < rxIdleAfter {
			continue
		}
		for _, c := range p.rxs {
			c.stale.Store(true)
		}
		p.active.Store(false)
		// A packet read between the test and the store above found the
		// poller still active and did not nudge it: look again.
		if time.Since(p.base)-time.Duration(p.lastUse.Load()) < rxIdleAfter || p.stop.Load() {
			p.active.Store(true)
			continue
		}
		p.sleeping.Add(1)
		tick.Stop()
		unix.Read(p.efd, buf[:]) //nolint:errcheck // a nudge, or close's
		tick.Reset(rxPollEvery)
	}
}

// use records that the forwarder of c's device read a packet at now
// (since base), wakes the poller if it rests, and reads c's setting at
// once if the last read was before the rest.
func (c *rxCoalescing) use(now time.Duration) {
	p := c.poller
	p.lastUse.Store(int64(now))
	if !p.active.Load() && p.active.CompareAndSwap(false, true) {
		unix.Write(p.efd, binary.NativeEndian.AppendUint64(nil, 1)) //nolint:errcheck // EAGAIN: already nudged
	}
	if c.stale.Load() {
		c.refresh()
	}
}

// close stops the polling and closes the devices' sockets.
func (p *rxPoller) close() {
	p.stop.Store(true)
	unix.Write(p.efd, binary.NativeEndian.AppendUint64(nil, 1)) //nolint:errcheck
	<-p.done
	unix.Close(p.efd)
	for _, c := range p.rxs {
		unix.Close(c.sock)
	}
}

// refresh reads the setting into frames; a failed read keeps the last
// value and the first failure.
func (c *rxCoalescing) refresh() {
	n, err := c.read()
	if err != nil {
		if c.failed.Load() == nil {
			err = fmt.Errorf("testbed: %s: reading its interrupt coalescing: %w", c.dev, err)
			c.failed.Store(&err)
		}
		return
	}
	c.frames.Store(int32(n))
	c.stale.Store(false)
}

// err is the first failed read's error, if any.
func (c *rxCoalescing) err() error {
	if p := c.failed.Load(); p != nil {
		return *p
	}
	return nil
}
