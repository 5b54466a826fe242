// Package testenv holds the one rule for tests that need something this
// machine may lack (root, namespaces, TUN, io_uring, real database servers,
// a peer tool): skip with the reason where it is missing, but fail where
// the test must run — under CI=true, or when the person running the tests
// opts in with the named variable set to 1. It is for tests only.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Opt-in variables, one per kind of thing a test may need.
const (
	NetNS = "NARROWS_REQUIRE_NETNS" // network namespaces, TUN devices, tc, iperf3
	DB    = "NARROWS_REQUIRE_DB"    // real PostgreSQL and MariaDB servers
	Host  = "NARROWS_REQUIRE_HOST"  // root, mounts, loop devices, io_uring
	Wine  = "NARROWS_REQUIRE_WINE"  // wine64 and mingw-w64, to run narrows.exe
)

// Required reports whether tests needing what optIn names must run here.
func Required(optIn string) bool {
	return os.Getenv("CI") == "true" || os.Getenv(optIn) == "1"
}

// Need skips t, saying what is missing, or fails it where Required(optIn).
func Need(t testing.TB, optIn, format string, a ...any) {
	t.Helper()
	why := fmt.Sprintf(format, a...)
	if Required(optIn) {
		t.Fatalf("required here (CI=true or %s=1), but %s", optIn, why)
	}
	t.Skipf("skipping: %s (set %s=1 to make this a failure)", why, optIn)
}
