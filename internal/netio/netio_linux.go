//go:build linux

package netio

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// take duplicates c's descriptor and closes c, which takes the socket out
// of the netpoller (Go deletes it from epoll on close; a mere dup would
// stay registered, as epoll watches the open file, not the number).
func take(c net.Conn) (*Socket, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return &Socket{conn: c}, nil
	}
	fd, err := detach(tc)
	if err != nil {
		return nil, err
	}
	return &Socket{fd: fd}, nil
}

// detach gives tc's socket a descriptor of its own, blocking, with Slice
// as its kernel timeouts, and closes tc.
func detach(tc *net.TCPConn) (int, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("netio: dup: %w", derr)
	}
	tc.Close()
	tv := unix.NsecToTimeval(Slice.Nanoseconds())
	for _, opt := range []int{unix.SO_SNDTIMEO, unix.SO_RCVTIMEO} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("netio: socket timeout: %w", err)
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("netio: blocking mode: %w", err)
	}
	return fd, nil
}

// rawLoops counts the loops (and blocking connections) on raw system calls.
var rawLoops atomic.Int32

// runRaw runs loop with the socket blocking in the kernel, as iperf3 and
// sockperf do. Up to GOMAXPROCS-1 loops at a time call the kernel raw:
// the goroutine keeps its P through the call, so the scheduler does no
// work around it and sysmon stays asleep (with Go's ordinary system calls
// it woke some 5,000 times a second on each side; measured with perf,
// round trips rose from 42k/s to 46k/s on loopback). The rest use Go's
// ordinary calls, so other goroutines and other loops always find a P.
// A raw call still yields to the runtime: the socket has a kernel timeout,
// so a signal (preemption, garbage collection) ends the call with EINTR
// at once instead of restarting it, and within Slice in any case.
func runRaw(fd int, loop func(Conn) error) error {
	if acquireRaw() {
		defer rawLoops.Add(-1)
		return loop(rawConn{fd: fd, raw: true})
	}
	return loop(rawConn{fd: fd})
}

// acquireRaw takes one of the GOMAXPROCS-1 places for a raw caller, if one
// is free; the caller gives it back with rawLoops.Add(-1).
func acquireRaw() bool {
	for limit := int32(runtime.GOMAXPROCS(0) - 1); ; {
		n := rawLoops.Load()
		if n >= limit {
			return false
		}
		if rawLoops.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func setReadLowWater(fd, n int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT, n)
}

// maxReceiveBuffer is the largest receive buffer TCP autotuning may grow
// to in this network namespace (the third field of net.ipv4.tcp_rmem), or
// 0 when it cannot be read.
func maxReceiveBuffer() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_rmem")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0
	}
	n, _ := strconv.Atoi(f[2])
	return n
}

func shutdownWrite(fd int) error { return unix.Shutdown(fd, unix.SHUT_WR) }
func closeFD(fd int) error       { return unix.Close(fd) }

// rawConn reads and writes with recvfrom and sendto, which go straight to
// the socket layer (read and write pass through the VFS first: measured,
// 1% more round trips).
type rawConn struct {
	fd  int
	raw bool // keep the P through the call: see runRaw
}

func (c rawConn) call(trap uintptr, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	var r uintptr
	var e unix.Errno
	if c.raw {
		r, _, e = unix.RawSyscall6(trap, uintptr(c.fd), uintptr(ptr), uintptr(len(p)), 0, 0, 0)
	} else {
		r, _, e = unix.Syscall6(trap, uintptr(c.fd), uintptr(ptr), uintptr(len(p)), 0, 0, 0)
	}
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func (c rawConn) Read(p []byte) (int, error) {
	n, err := c.call(unix.SYS_RECVFROM, p)
	switch {
	case err == unix.EINTR || err == unix.EAGAIN:
		// The timeout, or a signal before anything arrived: for a raw call
		// most likely the runtime's preemption, which must get its chance
		// now. Retrying would restart the timeout, and a runtime that
		// preempts every 10 ms would keep the slice from ever ending.
		return 0, ErrSlice
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c rawConn) Write(p []byte) (int, error) {
	n, err := c.call(unix.SYS_SENDTO, p)
	switch {
	case err == unix.EINTR || err == unix.EAGAIN:
		return 0, ErrSlice
	case err != nil:
		return 0, err
	}
	return n, nil
}

// sameHost says whether the connection's peer is on this host: a loopback
// address, or the very address this end uses.
func sameHost(fd int) bool {
	peer, err1 := unix.Getpeername(fd)
	local, err2 := unix.Getsockname(fd)
	if err1 != nil || err2 != nil {
		return false
	}
	ip := func(sa unix.Sockaddr) net.IP {
		switch a := sa.(type) {
		case *unix.SockaddrInet4:
			return net.IP(a.Addr[:])
		case *unix.SockaddrInet6:
			return net.IP(a.Addr[:])
		}
		return nil
	}
	p, l := ip(peer), ip(local)
	return p != nil && (p.IsLoopback() || p.Equal(l))
}
