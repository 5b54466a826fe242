//go:build linux

package testbed

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// LockTiming holds, for the rest of t, a machine-wide lock that every
// timing-sensitive testbed test takes (an flock on a file in the temp
// directory), so that `go test ./...`, which runs packages side by side,
// never runs two of them at once: each one's packets would be the other's
// noise. Other load on the machine it cannot stop.
func LockTiming(t testing.TB) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "narrows-testbed-timing.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("testbed: timing lock: %v", err)
	}
	start := time.Now()
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		t.Fatalf("testbed: timing lock %s: %v", path, err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Logf("testbed: waited %v for the timing lock (another package's timing test)", waited.Round(time.Millisecond))
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
}
