//go:build linux

package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Share holds, for the rest of t, n of the machine's Slots, shared by
// every process on it (flocks on files in the temp directory), so that
// `go test ./...`, which runs packages side by side, and the experiments'
// parallel tests never run more timing-sensitive work at once than the
// two cores carry: each one's packets would be the others' noise. A test
// that needs the machine to itself asks for Slots. Other load on the
// machine it cannot stop.
//
// Whoever is acquiring holds a gate first, so a test waiting for all the
// slots is not passed forever by tests taking one: while it waits for
// the running ones to end, no new one starts. A subtest of a test that
// holds shares takes none of its own: the parent's cover it, and one
// holding shares while it waits for more, behind another process's test
// that holds the gate waiting for those, would wait for ever.
func Share(t testing.TB, n int) {
	t.Helper()
	if !holders.add(t.Name()) {
		return
	}
	n = min(max(n, 1), Slots)
	release, waited, err := hold(n)
	if err != nil {
		holders.remove(t.Name())
		t.Fatalf("testbed: %v", err)
	}
	if waited > time.Second {
		t.Logf("testbed: waited %v for %d of %d timing shares (other timing tests)", waited.Round(time.Millisecond), n, Slots)
	}
	t.Cleanup(func() { release(); holders.remove(t.Name()) })
}

// Hold is Share for a TestMain, before any test runs (a package's
// servers started): it returns when n slots are held, and the function
// that lets them go.
func Hold(n int) (release func(), err error) {
	release, _, err = hold(min(max(n, 1), Slots))
	return release, err
}

// holders are the tests of this process holding shares.
var holders = testNames{names: map[string]bool{}}

type testNames struct {
	mu    sync.Mutex
	names map[string]bool
}

// add records name unless it or a test it is a subtest of is recorded,
// and says whether it did.
func (h *testNames) add(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for n := name; ; {
		if h.names[n] {
			return false
		}
		i := strings.LastIndexByte(n, '/')
		if i < 0 {
			break
		}
		n = n[:i]
	}
	h.names[name] = true
	return true
}

func (h *testNames) remove(name string) {
	h.mu.Lock()
	delete(h.names, name)
	h.mu.Unlock()
}

// hold takes n slots, 1 to Slots, and returns what lets them go and how
// long it waited for them.
func hold(n int) (release func(), waited time.Duration, err error) {
	dir := os.TempDir()
	var files []*os.File // every one opened; closing one releases its lock
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	open := func(name string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("the timing share's lock file: %v: give TMPDIR a directory this user can write", err)
		}
		files = append(files, f)
		return f, nil
	}
	start := time.Now()
	gate, err := open("narrows-testbed-timing.lock")
	if err != nil {
		return nil, 0, err
	}
	if err := flock(gate, unix.LOCK_EX); err != nil {
		closeAll()
		return nil, 0, fmt.Errorf("timing share %s: %v", gate.Name(), err)
	}
	slots := make([]*os.File, Slots) // nil once taken
	for i := range slots {
		if slots[i], err = open(fmt.Sprintf("narrows-testbed-slot-%d.lock", i)); err != nil {
			closeAll()
			return nil, 0, err
		}
	}
	var held []*os.File
	for len(held) < n {
		for i, f := range slots {
			if f != nil && len(held) < n && flock(f, unix.LOCK_EX|unix.LOCK_NB) == nil {
				held, slots[i] = append(held, f), nil
			}
		}
		if len(held) < n {
			// Only the gate's holder takes slots, so what it holds
			// stays its own while it waits for the rest to be let go
			// (a flock has no waiting list to join for "any of these").
			time.Sleep(20 * time.Millisecond)
		}
	}
	gate.Close() // the gate is let go
	for _, f := range slots {
		if f != nil {
			f.Close() // not taken
		}
	}
	return func() {
		for _, f := range held {
			f.Close()
		}
	}, time.Since(start), nil
}

// flock takes a lock on f, again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		if err := unix.Flock(int(f.Fd()), how); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// LockTiming holds the whole machine's share for the rest of t: no other
// timing-sensitive testbed test runs beside it.
func LockTiming(t testing.TB) { t.Helper(); Share(t, Slots) }
