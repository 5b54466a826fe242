//go:build linux

package netio

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Blocking turns a TCP connection into a net.Conn whose reads and writes
// block in the kernel on the calling thread, as libpq (pgbench, psql) and
// the C MySQL client do, for drivers that want a net.Conn for a whole
// session (db ping). It is the data plane's Socket without the loop: out
// of the netpoller, recvfrom/sendto, raw calls while a place is free (see
// runRaw). Deadlines are checked between calls of at most Slice each.
// Measured against pgbench on loopback: bench/db.sh.
func Blocking(c net.Conn) (net.Conn, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	local, remote := tc.LocalAddr(), tc.RemoteAddr()
	fd, err := detach(tc)
	if err != nil {
		return nil, err
	}
	bc := &blockingConn{c: rawConn{fd: fd, raw: acquireRaw()}, local: local, remote: remote}
	return bc, nil
}

type blockingConn struct {
	c             rawConn
	local, remote net.Addr
	rdl, wdl      atomic.Int64 // deadlines, unix ns; 0 = none
	closed        atomic.Bool
	active        atomic.Int32 // calls under way: Close waits for them
}

func expired(dl *atomic.Int64) bool {
	d := dl.Load()
	return d != 0 && time.Now().UnixNano() >= d
}

func (b *blockingConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: b.local, Addr: b.remote, Err: err}
}

func (b *blockingConn) Read(p []byte) (int, error) {
	b.active.Add(1)
	defer b.active.Add(-1)
	for {
		if b.closed.Load() {
			return 0, b.opError("read", net.ErrClosed)
		}
		if expired(&b.rdl) {
			return 0, b.opError("read", os.ErrDeadlineExceeded)
		}
		n, err := b.c.Read(p)
		switch {
		case err == ErrSlice:
			runtime.Gosched() // the slice ended, or a signal: let the runtime have its turn
		case err == io.EOF:
			return 0, io.EOF
		case err != nil:
			return 0, b.opError("read", os.NewSyscallError("recvfrom", err))
		default:
			return n, nil
		}
	}
}

func (b *blockingConn) Write(p []byte) (int, error) {
	b.active.Add(1)
	defer b.active.Add(-1)
	done := 0
	for done < len(p) {
		if b.closed.Load() {
			return done, b.opError("write", net.ErrClosed)
		}
		if expired(&b.wdl) {
			return done, b.opError("write", os.ErrDeadlineExceeded)
		}
		n, err := b.c.Write(p[done:])
		switch {
		case err == ErrSlice:
			runtime.Gosched()
		case err != nil:
			return done, b.opError("write", os.NewSyscallError("sendto", err))
		default:
			done += n
		}
	}
	return done, nil
}

// Close wakes any call blocked on another thread (shutdown), waits until
// it has returned, and only then frees the descriptor, so that a number
// reused by the next open is never read or written by mistake.
func (b *blockingConn) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	if b.c.raw {
		rawLoops.Add(-1)
	}
	unix.Shutdown(b.c.fd, unix.SHUT_RDWR)
	for b.active.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	return unix.Close(b.c.fd)
}

func (b *blockingConn) LocalAddr() net.Addr  { return b.local }
func (b *blockingConn) RemoteAddr() net.Addr { return b.remote }

func (b *blockingConn) SetDeadline(t time.Time) error {
	b.SetReadDeadline(t)
	return b.SetWriteDeadline(t)
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func (b *blockingConn) SetReadDeadline(t time.Time) error  { b.rdl.Store(nanos(t)); return nil }
func (b *blockingConn) SetWriteDeadline(t time.Time) error { b.wdl.Store(nanos(t)); return nil }

// Control gives TCP_INFO readers the descriptor (sysinfo.Controller).
func (b *blockingConn) Control(f func(fd uintptr)) error {
	if b.closed.Load() {
		return net.ErrClosed
	}
	f(uintptr(b.c.fd))
	return nil
}
