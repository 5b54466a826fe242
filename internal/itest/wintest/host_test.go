//go:build linux

package wintest

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// TestHostPackagesOnWindows runs `narrows host`'s Windows code in its
// packages' own tests built for Windows: the wake-up experiment's
// idle-priority spinners (each ended by release, GOMAXPROCS as it was),
// its pinned threads' round trips over blocking Winsock sockets, a job's
// failure and the job object that kills a job's processes, and
// the power scheme and hypervisor read from powrprof and the registry,
// and each processor's times (NtQuerySystemInformation) a stream's
// busiest core is read from.
// Wine pins threads and runs the sockets on Linux's loopback, so this
// checks the calls and their ends, not Windows' timing; Wine may not
// answer PowerGetActiveScheme, and the test then says so.
func TestHostPackagesOnWindows(t *testing.T) {
	packageTestsOnWindows(t,
		packageTests{pkg: "./internal/probe/wakeup", tests: []string{"TestCanHold", "TestSpinnersLetGo", "TestPairRoundTrips", "TestReceiveTimeout", "TestJobFailsOnWindows", "TestContainKills"}},
		// The names (TestHypervisorNames, power_test.go) run on every OS.
		packageTests{pkg: "./internal/sysinfo", tests: []string{"TestReadPower", "TestSchemeNames", "TestHypervisorNames", "TestCoreTimes", "TestCoreLoadBetween"}})
}

// TestHostDSNOnWindows: narrows host --dsn refuses on Windows before it
// connects (exit 2, one line, why): there Go's network poller stands
// between a session's calls, and would hide what waking costs.
func TestHostDSNOnWindows(t *testing.T) {
	w := itest.NewWine(t)
	r := w.Run(t, time.Minute, nil, "host", "--dsn", "postgres://narrows:Hunter2secret@127.0.0.1:1/postgres")
	last := strings.TrimSuffix(r.Stderr, "\n")
	if r.Code != 2 || strings.Contains(last, "\n") || !strings.Contains(last, "timed on Linux only") || strings.Contains(r.Stderr, "Hunter2secret") {
		t.Fatalf("narrows.exe host --dsn: exit %d, stderr %q: want exit 2 and one line saying Linux only, no password", r.Code, r.Stderr)
	}
}
