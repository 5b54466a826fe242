//go:build !windows

package disk

import "time"

// clockNow is the clock I/O is timed by: Go's own, which reads the system's
// monotonic clock to the nanosecond here (Windows: clock_windows.go).
func clockNow() time.Time { return time.Now() }
