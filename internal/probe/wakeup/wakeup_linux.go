//go:build linux

package wakeup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cpuLatencyDev is the kernel's CPU latency (PM QoS) request file: while
// a process holds it open with 0 written, a cpuidle governor picks only
// states of exit latency 0 (polling), as tuned's latency-performance
// profile and cyclictest hold it. Only root may open it.
const cpuLatencyDev = "/dev/cpu_dma_latency"

// holdWay is how this process keeps CPUs awake: the latency request where
// a cpuidle driver reads it and this process may write it, else
// idle-priority spinning threads (what the kernel's idle=poll would do,
// and the way that needs no privilege).
var holdWay = sync.OnceValues(func() (string, error) {
	drv, _ := os.ReadFile("/sys/devices/system/cpu/cpuidle/current_driver")
	if d := strings.TrimSpace(string(drv)); d != "" && d != "none" {
		if fd, err := unix.Open(cpuLatencyDev, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
			return HowLatencyRequest, nil
		}
	}
	if len(cpus()) < 2 {
		return "", errors.New("one CPU only")
	}
	return HowSpinners, nil
})

func canHold() (string, error) { return holdWay() }

// hold keeps every CPU awake until release.
func hold() (release func(), err error) {
	how, err := holdWay()
	if err != nil {
		return nil, err
	}
	if how == HowLatencyRequest {
		fd, err := unix.Open(cpuLatencyDev, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		if _, err := unix.Write(fd, binary.NativeEndian.AppendUint32(nil, 0)); err != nil {
			unix.Close(fd)
			return nil, err
		}
		return func() { unix.Close(fd) }, nil
	}
	return spin(cpus(), idleOn)
}

// idleOn pins the calling thread to cpu at SCHED_IDLE, for spin.
func idleOn(cpu int) error {
	if err := pin(cpu); err != nil {
		return err
	}
	return unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0)
}

// cpus are the CPUs this process may run on.
func cpus() []int {
	var s unix.CPUSet
	if err := unix.SchedGetaffinity(0, &s); err != nil {
		return nil
	}
	var out []int
	for c := 0; c < 1024 && len(out) < s.Count(); c++ {
		if s.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

func pin(cpu int) error {
	var s unix.CPUSet
	s.Set(cpu)
	return unix.SchedSetaffinity(0, &s)
}

func newPair() (pair, error) {
	set := cpus()
	if len(set) < 2 {
		return nil, errors.New("one CPU only: the two threads would take turns on it, and it would never idle")
	}
	l, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(l)
	if err := syscall.Bind(l, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, fmt.Errorf("loopback: %w", err)
	}
	if err := syscall.Listen(l, 1); err != nil {
		return nil, err
	}
	sa, err := syscall.Getsockname(l)
	if err != nil {
		return nil, err
	}
	c, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Connect(c, sa); err != nil {
		syscall.Close(c)
		return nil, fmt.Errorf("loopback: %w", err)
	}
	e, _, err := syscall.Accept4(l, syscall.SOCK_CLOEXEC)
	if err != nil {
		syscall.Close(c)
		return nil, err
	}
	tv := syscall.Timeval{Sec: 2}
	for _, fd := range []int{c, e} {
		syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)      //nolint:errcheck
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv) //nolint:errcheck
	}
	shut := func() { syscall.Shutdown(c, syscall.SHUT_RDWR) } //nolint:errcheck
	closeEnds := func() { syscall.Close(c); syscall.Close(e) }
	return startThreads(set, rawEnd(c), rawEnd(e), shut, closeEnds)
}

// rawEnd is a blocking socket called without telling Go's runtime (the
// thread keeps its P through the call), as netio's raw loops do: with
// Go's ordinary calls, the runtime's monitor and its spare threads woke
// to take the P back at every wait, and the blocks as is measured 13 to
// 76 µs a round trip by turns, where the same threads' calls made raw
// measured 50-53.
type rawEnd int

func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}

func (fd rawEnd) recv(b []byte) (int, bool, error) {
	for {
		n, err := rawIO(syscall.SYS_READ, int(fd), b)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, true, nil
		}
		return n, false, err
	}
}

func (fd rawEnd) sendAll(b []byte) error {
	for len(b) > 0 {
		n, err := rawIO(syscall.SYS_WRITE, int(fd), b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
