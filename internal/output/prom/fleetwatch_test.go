package prom

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestFleetWatchMetrics: every link's series carry its link label; a link
// added is up 0 until its first record; a link removed is gone from the
// next scrape; a record for a link not (or no longer) watched is dropped;
// the reloads are counted and the last one's outcome told.
func TestFleetWatchMetrics(t *testing.T) {
	t0 := time.Unix(1000, 0)
	e := NewFleetWatch("1.2.3", t0)
	e.Add("db1")
	e.Add("db2")
	e.Update("db1", &result.WatchInterval{Up: true, TotalRoundTrips: 7, Errors: map[string]int64{}, Sessions: 1,
		Idle: result.WatchRTT{Count: 7, Buckets: make([]uint64, len(result.WatchBuckets))}, PathMTU: 1500})
	e.Update("ghost", &result.WatchInterval{Up: true})
	out := scrape(t, e)
	for _, want := range []string{
		`narrows_watch_info{version="1.2.3"} 1`,
		"narrows_watch_links 2",
		`narrows_watch_up{link="db1"} 1`,
		`narrows_watch_up{link="db2"} 0`,
		`narrows_watch_round_trips_total{link="db1"} 7`,
		`narrows_watch_round_trip_seconds_count{link="db1",load="idle"} 7`,
		`narrows_watch_errors_total{kind="rr",link="db1"} 0`,
		`narrows_watch_path_mtu_bytes{link="db1"} 1500`,
		`narrows_watch_targets_reloads_total{result="failure"} 0`,
		"narrows_watch_targets_last_reload_successful 1",
		"narrows_watch_targets_last_reload_success_timestamp_seconds 1000",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "ghost") {
			t.Errorf("a link never added: %s", line)
		}
		fleetWide := strings.HasPrefix(line, "narrows_watch_info") || strings.HasPrefix(line, "narrows_watch_links") ||
			strings.HasPrefix(line, "narrows_watch_targets_")
		if line != "" && !strings.HasPrefix(line, "#") && !fleetWide && !strings.Contains(line, `link="`) {
			t.Errorf("a link's series without the link label: %s", line)
		}
	}
	e.Reloaded(false, t0.Add(time.Minute))
	e.Remove("db1")
	e.Update("db1", &result.WatchInterval{Up: true}) // a last record racing the removal
	out = scrape(t, e)
	if strings.Contains(out, `link="db1"`) || !strings.Contains(out, "narrows_watch_links 1") ||
		!strings.Contains(out, "narrows_watch_targets_last_reload_successful 0") ||
		!strings.Contains(out, `narrows_watch_targets_reloads_total{result="failure"} 1`) ||
		!strings.Contains(out, "narrows_watch_targets_last_reload_success_timestamp_seconds 1000") {
		t.Errorf("after a failed reload and db1 removed:\n%s", out)
	}
	e.Reloaded(true, t0.Add(2*time.Minute))
	if out = scrape(t, e); !strings.Contains(out, "narrows_watch_targets_last_reload_successful 1") ||
		!strings.Contains(out, "narrows_watch_targets_last_reload_success_timestamp_seconds 1120") {
		t.Errorf("after a reload that succeeded:\n%s", out)
	}
}
