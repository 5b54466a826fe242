package cli

import "time"

// SetMetricsTimeoutsForTest shortens the --prometheus-listen servers'
// read and idle timeouts (90 s idle would make a test wait 90 s), and
// gives a func that restores them.
func SetMetricsTimeoutsForTest(read, idle time.Duration) (restore func()) {
	old := metricsTimeouts
	metricsTimeouts.read, metricsTimeouts.write, metricsTimeouts.idle = read, read, idle
	return func() { metricsTimeouts = old }
}
