package metric

import (
	"fmt"
	"strings"
	"time"
)

// FormatHours formats a backup's duration: "85.5 s", "14.2 min", "23.7 h".
func FormatHours(seconds float64) string {
	switch {
	case seconds < 120:
		return fmt.Sprintf("%.1f s", seconds)
	case seconds < 2*3600:
		return fmt.Sprintf("%.1f min", seconds/60)
	default:
		return fmt.Sprintf("%.1f h", seconds/3600)
	}
}

// FormatSeconds is a run's time as a DBA reads it: "1.85 ms", "0.40 s",
// "12.5 s", "2.5 min", "1.2 h".
func FormatSeconds(s float64) string {
	switch {
	case s < 0:
		return "-" + FormatSeconds(-s)
	case s > 0 && s < 0.01:
		return FormatDuration(time.Duration(s * float64(time.Second)))
	case s < 10:
		return fmt.Sprintf("%.2f s", s)
	}
	return FormatHours(s)
}

// FormatSecondsRange is "0.05–0.25 s" (both ends in the unit of the larger).
func FormatSecondsRange(lo, hi time.Duration) string {
	l, h := FormatSeconds(lo.Seconds()), FormatSeconds(hi.Seconds())
	if l == h {
		return l
	}
	lu, hu := l[strings.LastIndexByte(l, ' '):], h[strings.LastIndexByte(h, ' '):]
	if lu == hu {
		return strings.TrimSuffix(l, lu) + "–" + h
	}
	return l + "–" + h
}

// FlagDuration writes d as a duration flag takes it: 10m, 1h30m, 2.5s.
func FlagDuration(d time.Duration) string {
	v := d.String()
	if strings.HasSuffix(v, "m0s") {
		v = strings.TrimSuffix(v, "0s")
	}
	if strings.HasSuffix(v, "h0m") {
		v = strings.TrimSuffix(v, "0m")
	}
	return v
}
