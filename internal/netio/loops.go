package netio

import (
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// watch is the bookkeeping every loop shares: whether it was asked to stop,
// and how long nothing has moved.
type watch struct {
	stop  *atomic.Bool // may be nil
	limit time.Duration
	quiet time.Time // when the current spell of empty slices was first seen; zero while data moves
	what  string    // what "nothing moved" means, for the error
}

// after accounts for one call that moved n bytes and returned err. It
// returns done when the loop should end (with err, nil on a clean stop),
// and otherwise whether err was only the end of a slice. The quiet spell
// is timed by the clock, not by counting slices: a slice may end early
// (a signal interrupts the call), and the clock is read only then.
func (w *watch) after(n int, err error) (done bool, out error) {
	if n > 0 {
		w.quiet = time.Time{}
	}
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, ErrSlice) {
		return true, err
	}
	if w.stop != nil && w.stop.Load() {
		return true, errStopped
	}
	if n == 0 {
		now := time.Now()
		if w.quiet.IsZero() {
			w.quiet = now
		} else if now.Sub(w.quiet) >= w.limit {
			return true, errors.New(w.what + " for " + w.limit.String())
		}
	}
	return false, nil
}

// Send writes buf again and again until stop is set, adding what it wrote
// to count, and gives up when nothing could be written for idle.
func Send(c Conn, buf []byte, stop *atomic.Bool, count *atomic.Int64, idle time.Duration) error {
	w := watch{stop: stop, limit: idle, what: "the receiver took nothing"}
	for !stop.Load() {
		n, err := c.Write(buf)
		count.Add(int64(n))
		if done, err := w.after(n, err); done {
			return quiet(err)
		}
	}
	return nil
}

// Receive reads until EOF or stop, adding what it read to count, and gives
// up when nothing arrived for idle.
func Receive(c Conn, buf []byte, stop *atomic.Bool, count *atomic.Int64, idle time.Duration) error {
	w := watch{stop: stop, limit: idle, what: "nothing arrived"}
	for !stop.Load() {
		n, err := c.Read(buf)
		count.Add(int64(n))
		if err == io.EOF {
			return nil
		}
		if done, err := w.after(n, err); done {
			return quiet(err)
		}
	}
	return nil
}

// ReadFull fills p, riding over slices until stop is set or idle passes.
// It returns io.EOF only when the peer closed before the first byte.
func ReadFull(c Conn, p []byte, stop *atomic.Bool, idle time.Duration) error {
	w := watch{stop: stop, limit: idle, what: "no answer"}
	for got := 0; got < len(p); {
		n, err := c.Read(p[got:])
		got += n
		if err == io.EOF {
			if got == 0 {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		}
		if done, err := w.after(n, err); done {
			return err
		}
	}
	return nil
}

// WriteAll writes all of p.
func WriteAll(c Conn, p []byte, stop *atomic.Bool, idle time.Duration) error {
	w := watch{stop: stop, limit: idle, what: "the peer took nothing"}
	for sent := 0; sent < len(p); {
		n, err := c.Write(p[sent:])
		sent += n
		if done, err := w.after(n, err); done {
			return err
		}
	}
	return nil
}

// quiet turns a requested stop into a clean end for the streaming loops,
// whose callers check the stop flag themselves.
func quiet(err error) error {
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

var errStopped = errors.New("stopped")

// ErrStopped reports whether err means the loop was asked to stop.
func ErrStopped(err error) bool { return errors.Is(err, errStopped) }
