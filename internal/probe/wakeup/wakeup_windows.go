//go:build windows

package wakeup

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/narrows/narrows/internal/result"
)

// x/sys/windows has no wrappers for these, and its Accept is a stub.
var (
	kernel32                   = windows.NewLazySystemDLL("kernel32.dll")
	procGetProcessAffinityMask = kernel32.NewProc("GetProcessAffinityMask")
	procSetThreadAffinityMask  = kernel32.NewProc("SetThreadAffinityMask")
	procSetThreadPriority      = kernel32.NewProc("SetThreadPriority")
	procAccept                 = windows.NewLazySystemDLL("ws2_32.dll").NewProc("accept")
)

// threadPriorityIdle is THREAD_PRIORITY_IDLE: in a normal-priority
// process, base priority 1, below every thread but the zero-page one, so
// any other thread made ready on the CPU preempts a spinner at once.
const threadPriorityIdle = -15

// Windows has no CPU latency request a process may hold (the power
// scheme's idle settings are the machine's, and changing them outlives a
// crash), so the CPUs are kept awake by spinning.
func canHold() (string, error) {
	set, err := cpus()
	if err != nil {
		return "", err
	}
	if len(set) < 2 {
		return "", errOneCPU
	}
	return result.HowSpinners, nil
}

func hold() (release func(), err error) {
	set, err := cpus()
	if err != nil {
		return nil, err
	}
	return spin(set, idleOn)
}

// idleOn pins the calling thread to cpu at THREAD_PRIORITY_IDLE, for spin.
func idleOn(cpu int) error {
	if err := procSetThreadPriority.Find(); err != nil {
		return err
	}
	if err := pin(cpu); err != nil {
		return err
	}
	prio := threadPriorityIdle // an int, sign-extended to the register
	if r, _, err := procSetThreadPriority.Call(uintptr(windows.CurrentThread()), uintptr(prio)); r == 0 {
		return fmt.Errorf("SetThreadPriority: %w", err)
	}
	return nil
}

// cpus are the CPUs this process may run on: its affinity mask, which
// covers one processor group (64 CPUs at most).
func cpus() ([]int, error) {
	if err := procGetProcessAffinityMask.Find(); err != nil {
		return nil, fmt.Errorf("the process's CPUs: %w", err)
	}
	var mask, system uintptr
	r, _, err := procGetProcessAffinityMask.Call(uintptr(windows.CurrentProcess()), uintptr(unsafe.Pointer(&mask)), uintptr(unsafe.Pointer(&system)))
	if r == 0 {
		return nil, fmt.Errorf("the process's CPUs: GetProcessAffinityMask: %w", err)
	}
	if mask == 0 {
		// Windows gives 0 when the process's threads are in several
		// processor groups.
		return nil, errors.New("the process's CPUs: its affinity mask is empty (its threads span processor groups)")
	}
	var out []int
	for c := range bits.UintSize {
		if mask&(1<<c) != 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// pin binds the calling thread to cpu; the caller has locked its
// goroutine to the thread.
func pin(cpu int) error {
	if err := procSetThreadAffinityMask.Find(); err != nil {
		return err
	}
	if r, _, err := procSetThreadAffinityMask.Call(uintptr(windows.CurrentThread()), 1<<cpu); r == 0 {
		return fmt.Errorf("SetThreadAffinityMask to CPU %d: %w", cpu, err)
	}
	return nil
}

var wsaStartup = sync.OnceValue(func() error {
	var d windows.WSAData
	return windows.WSAStartup(uint32(0x202), &d)
})

// socket is a TCP socket for blocking calls. WSA_FLAG_OVERLAPPED only
// allows overlapped calls (these pass none, so they block): without it
// Winsock ignores SO_RCVTIMEO (KB181610), and a dead peer would hang a
// thread for good. Not inherited: a child process must not hold the
// connection open.
func socket() (windows.Handle, error) {
	return windows.WSASocket(windows.AF_INET, windows.SOCK_STREAM, windows.IPPROTO_TCP, nil, 0,
		windows.WSA_FLAG_OVERLAPPED|windows.WSA_FLAG_NO_HANDLE_INHERIT)
}

func accept(l windows.Handle) (windows.Handle, error) {
	if err := procAccept.Find(); err != nil {
		return windows.InvalidHandle, err
	}
	r, _, err := procAccept.Call(uintptr(l), 0, 0)
	if windows.Handle(r) == windows.InvalidHandle {
		return windows.InvalidHandle, err
	}
	return windows.Handle(r), nil
}

// loopback is a TCP connection over 127.0.0.1: the client's end and the
// echo's, each with no delay and a receive timeout of 2 s.
func loopback() (client, echo end, err error) {
	c, e, err := loopbackSockets()
	if err != nil {
		return nil, nil, err
	}
	return wsaEnd(c), wsaEnd(e), nil
}

func loopbackSockets() (client, echo windows.Handle, err error) {
	if err := wsaStartup(); err != nil {
		return 0, 0, fmt.Errorf("winsock: %w", err)
	}
	l, err := socket()
	if err != nil {
		return 0, 0, fmt.Errorf("loopback socket: %w", err)
	}
	defer windows.Closesocket(l) //nolint:errcheck
	if err := windows.Bind(l, &windows.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, 0, fmt.Errorf("loopback: %w", err)
	}
	if err := windows.Listen(l, 1); err != nil {
		return 0, 0, fmt.Errorf("loopback listen: %w", err)
	}
	sa, err := windows.Getsockname(l)
	if err != nil {
		return 0, 0, fmt.Errorf("loopback: %w", err)
	}
	c, err := socket()
	if err != nil {
		return 0, 0, fmt.Errorf("loopback socket: %w", err)
	}
	if err := windows.Connect(c, sa); err != nil {
		windows.Closesocket(c) //nolint:errcheck
		return 0, 0, fmt.Errorf("loopback: %w", err)
	}
	e, err := accept(l)
	if err != nil {
		windows.Closesocket(c) //nolint:errcheck
		return 0, 0, fmt.Errorf("loopback accept: %w", err)
	}
	for _, s := range []windows.Handle{c, e} {
		windows.SetsockoptInt(s, windows.IPPROTO_TCP, windows.TCP_NODELAY, 1) //nolint:errcheck
		// A DWORD of milliseconds, not Linux's timeval.
		windows.SetsockoptInt(s, windows.SOL_SOCKET, windows.SO_RCVTIMEO, 2000) //nolint:errcheck
	}
	return c, e, nil
}

// wsaEnd is a socket called with WSARecv and WSASend and no OVERLAPPED:
// blocking in the kernel, never through Go's netpoller.
type wsaEnd windows.Handle

func (s wsaEnd) recv(b []byte) (int, bool, error) {
	wb := windows.WSABuf{Len: uint32(len(b)), Buf: &b[0]}
	var n, flags uint32
	err := windows.WSARecv(windows.Handle(s), &wb, 1, &n, &flags, nil, nil)
	if errors.Is(err, windows.WSAETIMEDOUT) {
		return 0, true, nil
	}
	return int(n), false, err
}

func (s wsaEnd) sendAll(b []byte) error {
	for len(b) > 0 {
		wb := windows.WSABuf{Len: uint32(len(b)), Buf: &b[0]}
		var n uint32
		if err := windows.WSASend(windows.Handle(s), &wb, 1, &n, 0, nil, nil); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (s wsaEnd) close() {
	windows.Shutdown(windows.Handle(s), windows.SHUT_RDWR) //nolint:errcheck
	windows.Closesocket(windows.Handle(s))                 //nolint:errcheck
}

func queriesHere() error { return errQueriesLinux }
