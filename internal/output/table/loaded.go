package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// loadedSummary writes `narrows net rr --under-load`: idle against loaded
// round trips, the load, the loaded connections' own RTT, responsiveness.
func loadedSummary(b *strings.Builder, l *result.Loaded) {
	fmt.Fprintf(b, "%-22s %9s %9s %9s %9s %9s %9s\n", "round trips", "count", "p50", "p99", "p99.9", "max", "trimmed")
	for _, p := range []struct {
		name string
		ph   result.LoadedPhase
	}{{"idle", l.Idle}, {"under load", l.Loaded}} {
		fmt.Fprintf(b, "%-22s %9s %9s %9s %9s %9s %9s\n", p.name, metric.FormatCount(p.ph.RoundTrips), dur(p.ph.P50), dur(p.ph.P99), dur(p.ph.P999), dur(p.ph.Max), dur(p.ph.Trimmed))
	}
	rise := "none"
	if l.Rise > 0 {
		rise = dur(l.Rise)
	}
	fmt.Fprintf(b, "rise                   %s at the median (the queue the load built)\n", rise)
	fmt.Fprintf(b, "load                   %d streams %s, %s, %s retransmits\n", l.Config.Streams, l.Config.Direction,
		metric.FormatBitRate(l.Throughput), metric.FormatCount(l.Retransmits))
	fmt.Fprintf(b, "on the loaded conns    kernel RTT %s (%d samples; what a replication stream's own acknowledgements wait)\n", dur(l.Self), l.SelfSamples)
	fmt.Fprintf(b, "handshake under load   %s\n", dur(l.Handshake))
	fmt.Fprintf(b, "responsiveness         %s RPM under load, %s RPM idle (round trips per minute, IETF draft)\n",
		metric.FormatCount(int64(l.Responsiveness+0.5)), metric.FormatCount(int64(l.IdleResponsiveness+0.5)))
}
