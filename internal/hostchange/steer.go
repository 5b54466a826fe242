package hostchange

import (
	"errors"
	"sync"

	"github.com/narrows/narrows/internal/result"
)

// ErrBusy refuses a second change while one is held: the second would
// read the first's setting as the one to put back.
var ErrBusy = errors.New("another run's change (steering or coalescing) is in place on this host; try again when it ends")

var held sync.Mutex // one change at a time in this process

// SteerRPS moves the protocol work of the packets dev receives off CPU
// off, to every other CPU online (each receive queue's rps_cpus), and
// returns what it changed and the undo that puts it back (it fills in
// Restored, or Error with what failed). Linux, as root; the returned
// Steering's End is left to the caller.
func SteerRPS(dev string, off int) (*result.Steering, func(*result.Steering), error) {
	if !held.TryLock() {
		return nil, nil, ErrBusy
	}
	st, undo, err := steerRPS(dev, off)
	if err != nil {
		held.Unlock()
		return nil, nil, err
	}
	var once sync.Once
	return st, func(s *result.Steering) {
		once.Do(func() {
			undo(s)
			held.Unlock()
		})
	}, nil
}
