//go:build linux

package testbed

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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
// It is polled every rxPollEvery on a goroutine of its own, never on the
// forwarder's thread: the ethtool ioctl takes the RTNL lock, which `ip`
// and namespace creation and teardown hold for milliseconds at a time, and
// a delivery must not wait on that. The forwarder reads the last value
// (an atomic load). Measured on this project's 2-core VM
// (BenchmarkRxCoalescingRead, TestDelayLineModeration's log): one read
// takes about 1 µs of CPU when nothing holds RTNL; 500 a second per
// direction is well under 0.1% of a core.
type rxCoalescing struct {
	sock   int    // AF_INET datagram socket in the device's namespace
	dev    string // the device's name there
	frames atomic.Int32
	reads  atomic.Int64 // polls made
	failed atomic.Pointer[error]
	stop   chan struct{}
	done   chan struct{}
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
	c := &rxCoalescing{sock: sock, dev: dev, stop: make(chan struct{}), done: make(chan struct{})}
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

// ethtoolCoalesce is struct ethtool_coalesce (linux/ethtool.h): cmd and
// 22 __u32 fields. internal/sysinfo has the same, unexported; this copy
// keeps the testbed apart from its API.
type ethtoolCoalesce struct {
	Cmd                       uint32
	RxUsecs, RxFrames         uint32
	RxUsecsIRQ, RxFramesIRQ   uint32
	TxUsecs, TxFrames         uint32
	TxUsecsIRQ, TxFramesIRQ   uint32
	StatsBlockUsecs           uint32
	AdaptiveRx, AdaptiveTx    uint32
	PktRateLow                uint32
	RxUsecsLow, RxFramesLow   uint32
	TxUsecsLow, TxFramesLow   uint32
	PktRateHigh               uint32
	RxUsecsHigh, RxFramesHigh uint32
	TxUsecsHigh, TxFramesHigh uint32
	RateSampleInterval        uint32
}

// ifreqData is struct ifreq with ifr_data, SIOCETHTOOL's argument.
type ifreqData struct {
	Name [unix.IFNAMSIZ]byte
	Data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// read returns the device's rx-frames now (ETHTOOL_GCOALESCE).
func (c *rxCoalescing) read() (int, error) {
	ec := ethtoolCoalesce{Cmd: unix.ETHTOOL_GCOALESCE}
	var ifr ifreqData
	if len(c.dev) >= len(ifr.Name) {
		return 0, unix.EINVAL
	}
	copy(ifr.Name[:], c.dev)
	ifr.Data = unsafe.Pointer(&ec)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(c.sock), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&ec)
	if errno != 0 {
		return 0, errno
	}
	c.reads.Add(1)
	return int(min(ec.RxFrames, 1<<16)), nil
}

// poll reads the setting every rxPollEvery until close. A read that fails
// (the device going away as the line closes) keeps the last value; the
// first failure is kept for err.
func (c *rxCoalescing) poll() {
	defer close(c.done)
	tick := time.NewTicker(rxPollEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		n, err := c.read()
		if err != nil {
			if c.failed.Load() == nil {
				err = fmt.Errorf("testbed: %s: reading its interrupt coalescing: %w", c.dev, err)
				c.failed.Store(&err)
			}
			continue
		}
		c.frames.Store(int32(n))
	}
}

// err is the first failed read's error, if any.
func (c *rxCoalescing) err() error {
	if p := c.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *rxCoalescing) start() { go c.poll() }

// close stops the polling and closes the socket.
func (c *rxCoalescing) close() {
	close(c.stop)
	<-c.done
	unix.Close(c.sock)
}
