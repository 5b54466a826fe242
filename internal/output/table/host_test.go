package table

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestHostDatabaseRow: a host run on a database's queries says which
// database, where its server is, and what waking adds to each query (a
// query's whole difference, twice the per-wake figure).
func TestHostDatabaseRow(t *testing.T) {
	w := &result.Wakeup{Verdict: result.WakeupCosts, How: result.HowLatencyRequest, AsIs: result.Seconds(80 * time.Microsecond),
		Awake: result.Seconds(20 * time.Microsecond), PerWake: result.Seconds(30 * time.Microsecond), PerWakeMargin: result.Seconds(2 * time.Microsecond)}
	for _, tc := range []struct {
		local bool
		want  string
	}{
		{true, "timed on PostgreSQL's own queries, SELECT 1 to 127.0.0.1:5432 (on this host: both ends): 60.0 µs ± 4.00 µs a query"},
		{false, "(on another host: this host's share)"},
	} {
		var b strings.Builder
		hostSummary(&b, &result.Host{Queries: 5000, Here: &result.HostSide{Wakeup: w},
			Database: &result.HostDatabase{Engine: "PostgreSQL", Server: "127.0.0.1:5432", Query: "SELECT 1", Local: tc.local}})
		if !strings.Contains(b.String(), tc.want) {
			t.Fatalf("want %q in:\n%s", tc.want, b.String())
		}
	}
}

// TestHostJobRow: a host run on the operator's job says it was the job,
// by its program's name, each "trip" one whole run, and what keeping the
// CPUs awake gave each run (twice the per-wake figure).
func TestHostJobRow(t *testing.T) {
	w := &result.Wakeup{Verdict: result.WakeupCosts, How: result.HowLatencyRequest, AsIs: result.Seconds(3200 * time.Millisecond),
		Awake: result.Seconds(800 * time.Millisecond), PerWake: result.Seconds(1200 * time.Millisecond), PerWakeMargin: result.Seconds(100 * time.Millisecond)}
	var b strings.Builder
	hostSummary(&b, &result.Host{Queries: 50000, Here: &result.HostSide{Wakeup: w}, Job: &result.HostJob{Program: "pgbench"}})
	for _, want := range []string{"3.20 s", "800 ms", `timed on the job (pgbench), run whole: each "trip" is one run: 2.40 s ± 200 ms a run`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %q in:\n%s", want, b.String())
		}
	}
}
