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
