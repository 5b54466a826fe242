//go:build windows

package sysinfo

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/windows"
)

// winTCPInfoVersion is the newest TCP_INFO version this Windows answered
// or may answer: 1 until it refuses it (before 1809), then 0; -1 once the
// call itself was refused as unsupported (before 1703, or Wine), so later
// calls do not ask again.
var winTCPInfoVersion atomic.Int32

func init() { winTCPInfoVersion.Store(1) }

const noTCPInfo = "TCP state not available: this Windows refused SIO_TCP_INFO (Windows 10 1703 / Server 2016 or later gives it)"

// ReadTCPInfo asks the socket's TCP state with WSAIoctl(SIO_TCP_INFO),
// the newest version first.
func ReadTCPInfo(rc Controller) (*TCPInfo, error) {
	var buf [winTCPInfoV1Size]byte
	var n uint32
	unsupported := true
	for v := winTCPInfoVersion.Load(); v >= 0; v-- {
		ver := uint32(v)
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = windows.WSAIoctl(windows.Handle(fd), sioTCPInfo, (*byte)(unsafe.Pointer(&ver)), 4,
				&buf[0], uint32(len(buf)), &n, nil, 0)
		})
		if err != nil {
			return nil, err
		}
		if serr == nil {
			winTCPInfoVersion.Store(v)
			return decodeWinTCPInfo(buf[:n])
		}
		// A version this Windows does not know is refused as an invalid
		// argument; the call, where Windows lacks it, as not supported.
		switch {
		case errors.Is(serr, windows.WSAEOPNOTSUPP):
		case errors.Is(serr, windows.WSAEINVAL):
			unsupported = false
		default:
			return nil, serr
		}
	}
	if unsupported {
		winTCPInfoVersion.Store(-1)
	}
	return nil, ErrUnavailable
}

// tcpBuffers is not known on Windows: it autotunes the receive window
// by a level (netsh interface tcp show global), not a byte count.
func tcpBuffers() (rmem, wmem [3]int64) { return }
