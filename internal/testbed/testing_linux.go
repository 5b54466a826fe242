//go:build linux

package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Share holds, for the rest of t, n of the machine's Slots, shared by
// every process on it (flocks on files in the temp directory), so that
// `go test ./...`, which runs packages side by side, and the experiments'
// parallel tests never run more timing-sensitive work at once than the
// two cores carry: each one's packets would be the others' noise. A test
// that needs the machine to itself asks for Slots, and while it holds
// them make test's background work (scripts/background.sh: the vets,
// staticcheck, the race and fuzz builds) is frozen. Other load on the
// machine it cannot stop.
//
// Whoever is acquiring holds a gate first, so a test waiting for all the
// slots is not passed forever by tests taking one: while it waits for
// the running ones to end, no new one starts.
func Share(t testing.TB, n int) {
	t.Helper()
	release, waited, err := hold(n)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if waited > time.Second {
		t.Logf("testbed: waited %v for %d of %d timing shares (other timing tests)", waited.Round(time.Millisecond), min(max(n, 1), Slots), Slots)
	}
	t.Cleanup(release)
}

// Hold is Share for a TestMain, before any test runs (a package's
// servers started): it returns when n slots are held, and the function
// that lets them go.
func Hold(n int) (release func(), err error) {
	release, _, err = hold(n)
	return release, err
}

// hold takes n slots (at least one, at most Slots) and, with all of
// them, the alone lock and the background's freeze.
func hold(n int) (release func(), waited time.Duration, err error) {
	n = min(max(n, 1), Slots)
	dir := os.TempDir()
	var opened []*os.File
	closeAll := func() {
		for _, f := range opened {
			f.Close() // closing releases a lock
		}
	}
	open := func(name string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("the timing share's lock file: %v: give TMPDIR a directory this user can write", err)
		}
		opened = append(opened, f)
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
	var slots [Slots]*os.File
	for i := range slots {
		if slots[i], err = open(fmt.Sprintf("narrows-testbed-slot-%d.lock", i)); err != nil {
			closeAll()
			return nil, 0, err
		}
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
	keep := []*os.File{}
	for i, f := range slots {
		if held[i] {
			keep = append(keep, f)
		} else {
			f.Close()
		}
	}
	thaw := func() {}
	if n == Slots {
		// The machine alone: the background's watcher thaws a frozen
		// background only while it holds this lock shared, so a test
		// that dies holding the machine leaves nothing frozen.
		alone, err := open("narrows-testbed-alone.lock")
		if err != nil {
			closeAll()
			return nil, 0, err
		}
		if err := flock(alone, unix.LOCK_EX); err != nil {
			closeAll()
			return nil, 0, fmt.Errorf("timing share %s: %v", alone.Name(), err)
		}
		keep = append(keep, alone)
		thaw = freezeBackground()
	}
	gate.Close() // the gate is let go; the slots are kept
	waited = time.Since(start)
	return func() {
		thaw()
		for _, f := range keep {
			f.Close()
		}
	}, waited, nil
}

// backgroundCgroups are make test's background work's cgroups
// (scripts/background.sh): under cgroup v1's freezer, or cgroup v2's
// hierarchy, each with the file that freezes it and the value for
// frozen and thawed.
func backgroundCgroups() (files []string, frozen, thawed string) {
	if m, _ := filepath.Glob("/sys/fs/cgroup/freezer/narrows-background-*/freezer.state"); len(m) > 0 {
		return m, "FROZEN", "THAWED"
	}
	m, _ := filepath.Glob("/sys/fs/cgroup/narrows-background-*/cgroup.freeze")
	return m, "1", "0"
}

// freezeBackground freezes make test's background work, if any runs,
// and waits (up to 5 s) until it is frozen; it returns what thaws it.
func freezeBackground() (thaw func()) {
	files, frozen, thawed := backgroundCgroups()
	if len(files) == 0 {
		return func() {}
	}
	for _, f := range files {
		os.WriteFile(f, []byte(frozen), 0) //nolint:errcheck // a background that ended meanwhile is gone
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, f := range files {
		for time.Now().Before(deadline) && !isFrozen(f) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return func() {
		for _, f := range files {
			os.WriteFile(f, []byte(thawed), 0) //nolint:errcheck // as above
		}
	}
}

// isFrozen reads whether a background cgroup is frozen: v1's state
// reads FREEZING until every task stopped, v2's events say frozen 1.
func isFrozen(file string) bool {
	if filepath.Base(file) == "freezer.state" {
		b, err := os.ReadFile(file)
		return err != nil || strings.TrimSpace(string(b)) == "FROZEN"
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "cgroup.events"))
	return err != nil || strings.Contains(string(b), "frozen 1")
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
