package hostchange

import (
	"errors"
	"sync"

	"github.com/narrows/narrows/internal/result"
)

// ErrBusy refuses a second change while one is held: the second would
// read the first's setting as the one to put back.
var ErrBusy = errors.New("another run's change (steering, coalescing or offloads) is in place on this host; try again when it ends")

var held sync.Mutex // one change at a time in this process

// SteerRPS moves the protocol work of the packets dev receives off CPU
// off, to every other CPU online (each receive queue's rps_cpus), and
// returns what it changed and the undo that puts it back (it fills in
// Restored, or Error with what failed). Linux, as root; the returned
// Steering's End is left to the caller.
func SteerRPS(dev string, off int) (*result.Steering, func(*result.Steering), error) {
	return holding(func() (*result.Steering, func(*result.Steering), error) { return steerRPS(dev, off) })
}

// holding makes change, one at a time in this process: a second is
// refused (ErrBusy) until the first's undo has run, once, however often
// it is called.
func holding[T any](change func() (*T, func(*T), error)) (*T, func(*T), error) {
	if !held.TryLock() {
		return nil, nil, ErrBusy
	}
	ch, undo, err := change()
	if err != nil {
		held.Unlock()
		return nil, nil, err
	}
	var once sync.Once
	return ch, func(c *T) {
		once.Do(func() {
			undo(c)
			held.Unlock()
		})
	}, nil
}
