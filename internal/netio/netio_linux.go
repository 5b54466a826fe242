//go:build linux

package netio

import (
	"io"
	"net"
	"runtime"

	"golang.org/x/sys/unix"
)

// Run calls loop with c's socket in blocking mode on a locked OS thread.
// c must not be used otherwise until loop returns; closing c from another
// goroutine waits until it does (at most one Slice after loop notices).
func Run(c net.Conn, loop func(Conn) error) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return portable(c, loop)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var lerr error
	err = rc.Read(func(fd uintptr) bool {
		tv := unix.NsecToTimeval(Slice.Nanoseconds())
		if lerr = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); lerr != nil {
			return true
		}
		if lerr = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); lerr != nil {
			return true
		}
		if lerr = unix.SetNonblock(int(fd), false); lerr != nil {
			return true
		}
		lerr = loop(rawConn(fd))
		unix.SetNonblock(int(fd), true) // back to Go's way for whatever follows
		return true
	})
	if err != nil {
		return err
	}
	return lerr
}

type rawConn int

func (fd rawConn) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(fd), p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, ErrSlice
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (fd rawConn) Write(p []byte) (int, error) {
	for {
		n, err := unix.Write(int(fd), p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return max(n, 0), ErrSlice
		case err != nil:
			return 0, err
		}
		return n, nil
	}
}
