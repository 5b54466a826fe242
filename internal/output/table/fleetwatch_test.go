package table_test

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/output/table"
	"github.com/narrows/narrows/internal/result"
)

// TestFleetWatchRows: a fleet watch's row is one line however many links
// are down (a few named, the rest counted), and its summary a row a link
// with each link's last failure under them.
func TestFleetWatchRows(t *testing.T) {
	var b strings.Builder
	w := table.New(&b)
	iv := result.NewInterval(result.ProbeFleetWatch, 0, 10*time.Second)
	f := &result.FleetWatchInterval{Links: 200, Up: 192, Down: 8, RoundTrips: 1920, Rate: 192,
		Slowest: []result.FleetWatchLink{{Name: "dr7", P99: result.Seconds(3 * time.Millisecond)}}}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		f.DownLinks = append(f.DownLinks, result.FleetWatchLink{Name: n, LastError: "connect: refused"})
	}
	iv.FleetWatch = f
	if err := w.Interval(iv); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "dr7 3.00 ms") || !strings.Contains(lines[1], "a, b, c, d, e, +3") {
		t.Fatalf("rows:\n%s", b.String())
	}
	sum := &result.FleetWatch{Targets: "@t", Duration: result.Seconds(time.Minute), Links: []result.FleetWatchSummary{
		{Name: "db1", Addr: "10.0.0.1:7447", Watch: &result.Watch{RoundTrips: 60, Sessions: 1, Errors: map[string]int64{}}},
		{Name: "db2", Addr: "10.0.0.2:7447", Watch: &result.Watch{Errors: map[string]int64{"connect": 4}, Down: result.Seconds(time.Minute), LastError: "connect: refused"}},
	}}
	var s strings.Builder
	table.Summarizer(sum)(&s)
	out := s.String()
	if !strings.Contains(out, "watched 2 links of 1m0s from @t") || !strings.Contains(out, "  db2: connect: refused") ||
		strings.Count(out, "10.0.0.") != 2 {
		t.Fatalf("summary:\n%s", out)
	}
}
