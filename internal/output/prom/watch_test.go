package prom

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

func TestWatchMetrics(t *testing.T) {
	e := NewWatch("1.2.3", "")
	// Nothing measured yet: who is watching, and not up.
	if out := scrape(t, e); !strings.Contains(out, `narrows_watch_info{version="1.2.3"} 1`) || !strings.Contains(out, "narrows_watch_up 0") ||
		strings.Contains(out, "round_trip") {
		t.Fatalf("before the first record:\n%s", out)
	}
	buckets := make([]uint64, len(result.WatchBuckets))
	for i := range buckets {
		buckets[i] = 10
	}
	buckets[0] = 3
	e.Update(&result.WatchInterval{Up: true, TotalRoundTrips: 12, Errors: map[string]int64{result.WatchErrRR: 2}, Sessions: 3,
		Idle:    result.WatchRTT{Count: 10, Sum: result.Seconds(time.Millisecond), Buckets: buckets},
		Loaded:  result.WatchRTT{Count: 2, Sum: result.Seconds(20 * time.Millisecond), Buckets: make([]uint64, len(result.WatchBuckets))},
		Streams: []result.WatchStream{{Direction: result.DirDown, At: time.Unix(1000, 0), Throughput: 9e8, RPM: 1200, Loaded: 10}},
		MTUHere: 1500})
	out := scrape(t, e)
	for _, want := range []string{
		"narrows_watch_up 1",
		`narrows_watch_round_trip_seconds_bucket{load="idle",le="5e-05"} 3`,
		`narrows_watch_round_trip_seconds_bucket{load="idle",le="10"} 10`,
		`narrows_watch_round_trip_seconds_count{load="loaded"} 2`,
		`narrows_watch_round_trip_seconds_bucket{load="loaded",le="+Inf"} 2`,
		"narrows_watch_round_trips_total 12",
		`narrows_watch_errors_total{kind="rr"} 2`,
		`narrows_watch_errors_total{kind="connect"} 0`,
		`narrows_watch_stream_throughput_bits_per_second{direction="down"} 9e+08`,
		`narrows_watch_responsiveness_round_trips_per_second{direction="down"} 20`, // 1200 RPM
		`narrows_watch_stream_last_timestamp_seconds{direction="down"} 1000`,
		`narrows_watch_interface_mtu_bytes{end="here"} 1500`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	// Not measured: absent, not 0.
	for _, absent := range []string{`direction="up"`, `end="agent"`, "path_mtu"} {
		if strings.Contains(out, absent) {
			t.Errorf("%s reported before it was measured", absent)
		}
	}
	// --name is a constant label on every series.
	named := NewWatch("1.2.3", "db2")
	named.Update(&result.WatchInterval{Up: true, Errors: map[string]int64{}})
	for _, line := range strings.Split(scrape(t, named), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(line, `target="db2"`) {
			t.Errorf("a series without the target label: %s", line)
		}
	}
}
