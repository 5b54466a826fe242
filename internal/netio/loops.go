package netio

import (
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// Send writes buf again and again until stop is set, adding what it wrote
// to count, and gives up when nothing could be written for idle.
func Send(c Conn, buf []byte, stop *atomic.Bool, count *atomic.Int64, idle time.Duration) error {
	quiet := time.Duration(0)
	for !stop.Load() {
		n, err := c.Write(buf)
		count.Add(int64(n))
		switch {
		case errors.Is(err, ErrSlice) && n == 0:
			if quiet += Slice; quiet >= idle {
				return errors.New("the receiver took nothing for " + idle.String())
			}
		case err != nil && !errors.Is(err, ErrSlice):
			return err
		default:
			quiet = 0
		}
	}
	return nil
}

// Receive reads until EOF or stop, adding what it read to count, and gives
// up when nothing arrived for idle.
func Receive(c Conn, buf []byte, stop *atomic.Bool, count *atomic.Int64, idle time.Duration) error {
	quiet := time.Duration(0)
	for !stop.Load() {
		n, err := c.Read(buf)
		count.Add(int64(n))
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, ErrSlice):
			if quiet += Slice; quiet >= idle {
				return errors.New("nothing arrived for " + idle.String())
			}
		case err != nil:
			return err
		default:
			quiet = 0
		}
	}
	return nil
}

// ReadFull fills p, riding over slices until stop is set or idle passes.
// It returns io.EOF only when the peer closed before the first byte.
func ReadFull(c Conn, p []byte, stop *atomic.Bool, idle time.Duration) error {
	got, quiet := 0, time.Duration(0)
	for got < len(p) {
		n, err := c.Read(p[got:])
		got += n
		switch {
		case err == io.EOF:
			if got == 0 {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		case errors.Is(err, ErrSlice):
			if stop != nil && stop.Load() {
				return errStopped
			}
			if quiet += Slice; quiet >= idle {
				return errors.New("no answer for " + idle.String())
			}
		case err != nil:
			return err
		default:
			quiet = 0
		}
	}
	return nil
}

// WriteAll writes all of p.
func WriteAll(c Conn, p []byte, stop *atomic.Bool, idle time.Duration) error {
	sent, quiet := 0, time.Duration(0)
	for sent < len(p) {
		n, err := c.Write(p[sent:])
		sent += n
		switch {
		case errors.Is(err, ErrSlice):
			if stop != nil && stop.Load() {
				return errStopped
			}
			if quiet += Slice; quiet >= idle && n == 0 {
				return errors.New("the peer took nothing for " + idle.String())
			}
		case err != nil:
			return err
		default:
			quiet = 0
		}
	}
	return nil
}

var errStopped = errors.New("stopped")

// ErrStopped reports whether err means the loop was asked to stop.
func ErrStopped(err error) bool { return errors.Is(err, errStopped) }
