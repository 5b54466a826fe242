package netio

import (
	"errors"
	"net"
	"os"
	"time"
)

// portable runs loop on Go's own socket handling, with deadlines standing
// in for the kernel timeouts.
func portable(c net.Conn, loop func(Conn) error) error {
	defer c.SetDeadline(time.Time{})
	return loop(deadlineConn{c})
}

type deadlineConn struct{ c net.Conn }

func (d deadlineConn) Read(p []byte) (int, error) {
	d.c.SetReadDeadline(time.Now().Add(Slice))
	n, err := d.c.Read(p)
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, ErrSlice
	}
	if n > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		err = nil
	}
	return n, err
}

func (d deadlineConn) Write(p []byte) (int, error) {
	d.c.SetWriteDeadline(time.Now().Add(Slice))
	n, err := d.c.Write(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, ErrSlice
	}
	return n, err
}
