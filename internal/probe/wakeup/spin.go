package wakeup

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// spinning is how many spinners run now, for the tests: release must
// leave none.
var spinning atomic.Int32

// spin runs a thread on each CPU of set that spins until release, made
// the lowest priority there is by idle (SCHED_IDLE on Linux,
// THREAD_PRIORITY_IDLE on Windows) once pinned to its CPU: a CPU with a
// ready thread never idles, and any other thread that wakes there takes
// it at once. Each spinner gets a P of its own, so the measuring threads
// never wait for one. Its threads end with it (their goroutines stay
// locked), so no other goroutine inherits their pinning or priority.
func spin(set []int, idle func(cpu int) error) (func(), error) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	prev := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(prev + len(set))
	started := make(chan error, len(set))
	for _, c := range set {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread ends with it
			if err := idle(c); err != nil {
				started <- err
				return
			}
			spinning.Add(1)
			defer spinning.Add(-1)
			started <- nil
			for !stop.Load() {
			}
		}()
	}
	var err error
	for range set {
		err = errors.Join(err, <-started)
	}
	release := func() {
		stop.Store(true)
		wg.Wait()
		runtime.GOMAXPROCS(prev)
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("spinning threads: %w", err)
	}
	return release, nil
}
