//go:build linux

package wintest

import (
	"testing"
)

// TestHostPackagesOnWindows runs `narrows host`'s Windows code in its
// packages' own tests built for Windows: the wake-up experiment's
// idle-priority spinners (each ended by release, GOMAXPROCS as it was)
// and its pinned threads' round trips over blocking Winsock sockets, and
// the power scheme and hypervisor read from powrprof and the registry,
// and each processor's times (NtQuerySystemInformation) a stream's
// busiest core is read from.
// Wine pins threads and runs the sockets on Linux's loopback, so this
// checks the calls and their ends, not Windows' timing; Wine may not
// answer PowerGetActiveScheme, and the test then says so.
func TestHostPackagesOnWindows(t *testing.T) {
	packageTestsOnWindows(t,
		packageTests{pkg: "./internal/probe/wakeup", tests: []string{"TestCanHold", "TestSpinnersLetGo", "TestPairRoundTrips", "TestReceiveTimeout"}},
		// The names (TestHypervisorNames, power_test.go) run on every OS.
		packageTests{pkg: "./internal/sysinfo", tests: []string{"TestReadPower", "TestSchemeNames", "TestHypervisorNames", "TestCoreTimes", "TestCoreLoadBetween"}})
}
