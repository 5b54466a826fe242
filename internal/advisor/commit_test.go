package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestCommitSplitNeedsEnoughFlushes: the split between the replica's
// storage and the round trip rests on the median of at least MinFlushes
// of the agent's flushes; with fewer (one stall is then the median), it
// is not said, and the session's rate says why and what to run.
func TestCommitSplitNeedsEnoughFlushes(t *testing.T) {
	lat := func(d time.Duration) *result.Latencies {
		return &result.Latencies{P50: result.Seconds(d), P99: result.Seconds(d)}
	}
	for _, n := range []int64{1, MinFlushes - 1, MinFlushes, 200} {
		c := &result.Commit{Config: result.CommitConfig{BlockBytes: 1024, InFlight: 1, Ack: result.AckFlush, Flush: result.FlushFdatasync},
			Commits: n, Flushes: n, Rate: 20, Latency: *lat(42 * time.Millisecond), AgentWrite: lat(20 * time.Microsecond), AgentFlush: lat(12200 * time.Microsecond)}
		var split bool
		var detail string
		for _, f := range commitFindings(c) {
			switch f.Code {
			case "commit.split":
				split = true
			case "commit.session_rate":
				detail = f.Detail
			}
		}
		if split != (n >= MinFlushes) {
			t.Errorf("%d flushes: commit.split said %v", n, split)
		}
		if said := strings.Contains(detail, "fewer than the"); said == (n >= MinFlushes) {
			t.Errorf("%d flushes: the session's rate says why the split is not said: %v (%q)", n, said, detail)
		}
	}
}
