//go:build linux

package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
// the running ones to end, no new one starts.
func Share(t testing.TB, n int) {
	t.Helper()
	n = min(max(n, 1), Slots)
	dir := os.TempDir()
	open := func(name string) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("testbed: the timing share's lock file: %v: give TMPDIR a directory this user can write", err)
		}
		return f
	}
	start := time.Now()
	gate := open("narrows-testbed-timing.lock")
	defer gate.Close() // closing releases the gate
	if err := flock(gate, unix.LOCK_EX); err != nil {
		t.Fatalf("testbed: timing share %s: %v", gate.Name(), err)
	}
	var slots [Slots]*os.File
	for i := range slots {
		slots[i] = open(fmt.Sprintf("narrows-testbed-slot-%d.lock", i))
	}
	held := make([]bool, Slots)
	for taken := 0; taken < n; {
		for i, f := range slots {
			if taken < n && !held[i] && flock(f, unix.LOCK_EX|unix.LOCK_NB) == nil {
				held[i] = true
				taken++
			}
		}
		if taken < n {
			// Only the gate's holder takes slots, so what it holds
			// stays its own while it waits for the rest to be let go
			// (a flock has no waiting list to join for "any of these").
			time.Sleep(20 * time.Millisecond)
		}
	}
	for i, f := range slots {
		if !held[i] {
			f.Close()
		}
	}
	if waited := time.Since(start); waited > time.Second {
		t.Logf("testbed: waited %v for %d of %d timing shares (other timing tests)", waited.Round(time.Millisecond), n, Slots)
	}
	t.Cleanup(func() {
		for i, f := range slots {
			if held[i] {
				f.Close() // closing releases the slot
			}
		}
	})
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
