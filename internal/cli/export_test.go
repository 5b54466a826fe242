package cli

import (
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/probe/watch"
)

// SetMetricsTimeoutsForTest shortens the --prometheus-listen servers'
// read and idle timeouts (90 s idle would make a test wait 90 s), and
// gives a func that restores them.
func SetMetricsTimeoutsForTest(read, idle time.Duration) (restore func()) {
	old := metricsTimeouts
	metricsTimeouts.read, metricsTimeouts.write, metricsTimeouts.idle = read, read, idle
	return func() { metricsTimeouts = old }
}

// WatchTargets reads fleet watch's --targets (the docs' example is held to it).
func WatchTargets(v string) ([]string, error) {
	ts, err := watchTargets(v, client.Options{}, watch.StreamConfig{})
	var out []string
	for _, t := range ts {
		out = append(out, t.Name+"="+t.Agent.Addr)
	}
	return out, err
}
