//go:build linux

package testbed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The delay line's accuracy tests measure with UDP probes sent and received
// by this test process itself, on sockets made inside the two namespaces
// (Host.Do). A probe carries its send time, read just before the write
// that hands it to the kernel (which carries it through A's stack into the
// line in the same call), and its arrival is the kernel's receive
// timestamp (SO_TIMESTAMPNS): the moment the line's write delivered it to
// B's socket, however late this process then reads it. So a one-way delay
// is the line's, not this test's scheduling: on this project's VMs the
// receiving goroutine woke 40–150 µs after the packet at the median and up
// to 2 ms at p99, which made the line look that much late. The kernel
// stamps with the real-time clock, so the base is read on both clocks; the
// real-time clock is only slewed, by parts per million, during a test.

// probeHeader is the sequence number and the send time (ns since the
// probe's base) at the start of every probe.
const probeHeader = 16

// udpIPOverhead is the IPv4 and UDP headers around a probe's payload.
const udpIPOverhead = 28

// arrival is one probe as received.
type arrival struct {
	seq     uint64
	oneWay  time.Duration // receive time − send time
	arrived time.Duration // since the base
}

// udpPath is a socket in src connected to a socket in dst.
type udpPath struct {
	base     time.Time
	baseWall int64 // base on the real-time clock, ns since the epoch
	src, dst *net.UDPConn
}

// newUDPPath opens dst's socket on dst's address and src's socket
// connected to it, each inside its own host's namespace.
func newUDPPath(t *testing.T, src, dst *Host) *udpPath {
	t.Helper()
	now := time.Now()
	p := &udpPath{base: now, baseWall: now.UnixNano()}
	if err := dst.Do(func() (err error) {
		p.dst, err = net.ListenUDP("udp4", &net.UDPAddr{IP: dst.Addr.AsSlice()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.dst.Close() })
	p.dst.SetReadBuffer(4 << 20) //nolint:errcheck // best effort; losses show in the counts
	if err := setTimestamps(p.dst); err != nil {
		t.Fatalf("SO_TIMESTAMPNS: %v", err)
	}
	if err := awaitStamps(p.dst); err != nil {
		t.Fatal(err)
	}
	if err := src.Do(func() (err error) {
		p.src, err = net.DialUDP("udp4", nil, p.dst.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.src.Close() })
	return p
}

// send sends probe seq with size bytes of UDP payload.
func (p *udpPath) send(seq uint64, size int, buf []byte) error {
	buf = buf[:max(size, probeHeader)]
	binary.BigEndian.PutUint64(buf, seq)
	binary.BigEndian.PutUint64(buf[8:], uint64(time.Since(p.base)))
	_, err := p.src.Write(buf)
	return err
}

// receive collects probes until want have arrived or nothing arrives for
// quiet; it returns them in arrival order, each timed by the kernel.
func (p *udpPath) receive(want int, quiet time.Duration) ([]arrival, error) {
	var got []arrival
	buf := make([]byte, 65536)
	oob := make([]byte, 128)
	for len(got) < want {
		p.dst.SetReadDeadline(time.Now().Add(quiet)) //nolint:errcheck
		n, oobn, _, _, err := p.dst.ReadMsgUDP(buf, oob)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		if n < probeHeader {
			continue
		}
		at, err := kernelTime(oob[:oobn])
		if err != nil {
			return got, err
		}
		now := time.Duration(at - p.baseWall)
		sent := time.Duration(binary.BigEndian.Uint64(buf[8:]))
		got = append(got, arrival{seq: binary.BigEndian.Uint64(buf), oneWay: now - sent, arrived: now})
	}
	return got, nil
}

// setTimestamps asks the kernel to stamp every datagram c receives.
func setTimestamps(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	return serr
}

// awaitStamps returns once the kernel stamps c's datagrams as it delivers
// them. It stamps them only while a static key is on, which the first
// socket on the machine to ask for receive stamps turns on from a work
// queue (net_enable_timestamp), and the last one to close turns off: a
// datagram that arrives before the worker has run carries no stamp, and
// recvmsg fills in the time it is read ("Race occurred between timestamp
// enabling and packet receiving. Fill in the current time for now.",
// net/socket.c). On this project's 2-core VM, busy, the first stamped
// datagram came 0.1 to 72 ms after setsockopt (15 tries, 8 over 5 ms); a
// probe before it carried the receiving goroutine's wake-up instead of
// the line's delivery (errors of 1–12 ms, where the line's own counters
// said 3 µs). So c sends itself a datagram, sleeps, and reads it, until its
// stamp is from before the sleep.
func awaitStamps(c *net.UDPConn) error {
	const sleep = 2 * time.Millisecond
	defer c.SetReadDeadline(time.Time{}) //nolint:errcheck // the socket's readers set their own, or none
	buf := make([]byte, 64)
	oob := make([]byte, 128)
	self := c.LocalAddr().(*net.UDPAddr)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.WriteToUDP(buf[:1], self); err != nil {
			return fmt.Errorf("a datagram to the probes' own socket: %w", err)
		}
		time.Sleep(sleep)
		c.SetReadDeadline(time.Now().Add(time.Second)) //nolint:errcheck
		_, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
		read := time.Now().UnixNano()
		if err != nil {
			return fmt.Errorf("a datagram to the probes' own socket: %w", err)
		}
		at, err := kernelTime(oob[:oobn])
		if err != nil {
			return err
		}
		if read-at >= int64(sleep/2) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the kernel still stamps datagrams when they are read, not when they arrive, 10 s after SO_TIMESTAMPNS")
		}
	}
}

// kernelTime is the SCM_TIMESTAMPNS receive time in a datagram's control
// messages, ns since the epoch.
func kernelTime(oob []byte) (int64, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, err
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return ts.Nano(), nil
		}
	}
	return 0, errors.New("a probe came without its kernel receive timestamp")
}

// sendPaced sends n probes of size bytes, one every gap (gap 0: back to
// back), while receiving them; it returns what arrived.
func (p *udpPath) sendPaced(t *testing.T, n, size int, gap, quiet time.Duration) []arrival {
	t.Helper()
	var got []arrival
	var rerr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		got, rerr = p.receive(n, quiet)
	}()
	buf := make([]byte, 65536)
	start := time.Now()
	for i := range n {
		if gap > 0 {
			if d := time.Until(start.Add(time.Duration(i) * gap)); d > 0 {
				time.Sleep(d)
			}
		}
		if err := p.send(uint64(i), size, buf); err != nil {
			t.Fatalf("sending probe %d: %v", i, err)
		}
	}
	wg.Wait()
	if rerr != nil {
		t.Fatalf("receiving probes: %v", rerr)
	}
	return got
}

// stolen is how long the hypervisor has kept this machine's vCPUs from
// running since boot, all of them together: the steal column of
// /proc/stat, in clock ticks (USER_HZ, 100 a second on every Linux).
func stolen(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		t.Fatalf("/proc/stat begins %q: no steal column", line)
	}
	ticks, err := strconv.ParseInt(f[8], 10, 64)
	if err != nil {
		t.Fatalf("/proc/stat steal: %v", err)
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// oneWays returns the arrivals' one-way delays, sorted.
func oneWays(as []arrival) []time.Duration {
	d := make([]time.Duration, len(as))
	for i, a := range as {
		d[i] = a.oneWay
	}
	slices.Sort(d)
	return d
}

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func stddev(ds []time.Duration) time.Duration {
	if len(ds) < 2 {
		return 0
	}
	var sum float64
	for _, d := range ds {
		sum += float64(d)
	}
	mean := sum / float64(len(ds))
	var ss float64
	for _, d := range ds {
		ss += (float64(d) - mean) * (float64(d) - mean)
	}
	return time.Duration(math.Sqrt(ss / float64(len(ds)-1)))
}

// outOfOrder counts arrivals with a lower sequence number than one before.
func outOfOrder(as []arrival) int {
	n := 0
	var hi uint64
	for i, a := range as {
		if i > 0 && a.seq < hi {
			n++
		}
		hi = max(hi, a.seq)
	}
	return n
}
