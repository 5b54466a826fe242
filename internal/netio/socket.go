package netio

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// ErrClosed is returned by a Socket's methods after Close.
var ErrClosed = errors.New("netio: socket closed")

// Socket is one data connection taken over by netio for a measurement.
//
// On Linux it is taken out of Go's netpoller. Go registers every socket
// with epoll, edge-triggered, and a runtime thread idling in epoll_wait is
// woken by every segment that arrives and every ACK that frees send
// buffer, though nothing waits for those events. On loopback that was
// about 45,000 wake-ups a second on the core the measurement needs
// (perf: 206k epoll_pwait calls in 4.5 s at the receiver), and it cost a
// fifth of the single-stream rate. Elsewhere, and for connections that are
// not TCP, the Socket is the connection itself, with deadlines.
//
// Control (TCP_INFO sampling) may run beside Run from another goroutine;
// Close waits until both have returned.
type Socket struct {
	mu     sync.RWMutex
	closed bool
	conn   net.Conn // the portable path; nil on the raw path
	fd     int      // the raw path: a descriptor of our own, not in the netpoller
}

// Take takes c over: from then on use only the Socket, and Close it. On the
// raw path c is closed at once (that is what takes it out of the
// netpoller); the connection lives on in the Socket.
func Take(c net.Conn) (*Socket, error) { return take(c) }

// Run runs loop on the connection: on Linux with the socket blocking in the
// kernel (raw calls while a place is free, see runRaw), every call bounded
// by Slice.
func (s *Socket) Run(loop func(Conn) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.conn != nil {
		return portable(s.conn, loop)
	}
	return runRaw(s.fd, loop)
}

// CloseWrite sends FIN: the peer reads EOF after the last byte.
func (s *Socket) CloseWrite() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.conn == nil {
		return shutdownWrite(s.fd)
	}
	if cw, ok := s.conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Control calls f with the socket's descriptor, as syscall.RawConn does.
func (s *Socket) Control(f func(fd uintptr)) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.conn == nil {
		f(uintptr(s.fd))
		return nil
	}
	sc, ok := s.conn.(syscall.Conn)
	if !ok {
		return errors.ErrUnsupported
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(f)
}

// ReadBatch asks the kernel to wake a blocked read only once n bytes are
// there (SO_RCVLOWAT; a read still returns what arrived when its slice
// ends, and at EOF). A bulk receiver then reads in large pieces instead of
// waking for every segment: on loopback, where the receiving core is the
// limit, that is about a tenth more throughput. Where the option is
// missing, it does nothing.
//
// Only for a peer on this host. Across a network a batch as large as the
// first window starves it: the receiver does not read until a window's
// worth has arrived, the sender cannot send more than a window, and
// receive-buffer autotuning, which grows the window by what the reader
// takes each round trip, never sees more than one batch. Across the
// testbed's 20 ms, 100 Mbit/s line one stream was held to 18.8 Mbit/s in
// each direction (94 Mbit/s reading as data comes); on a LAN the same cap
// is 64 KiB per round trip, 2.6 Gbit/s at 200 µs.
func (s *Socket) ReadBatch(n int) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.conn != nil || n <= 1 || !sameHost(s.fd) {
		return nil
	}
	return setReadLowWater(s.fd, n)
}

// Close closes the connection once Run and Control have returned.
func (s *Socket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.conn != nil {
		return s.conn.Close()
	}
	return closeFD(s.fd)
}
