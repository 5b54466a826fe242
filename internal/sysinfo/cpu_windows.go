//go:build windows

package sysinfo

import (
	"time"

	"golang.org/x/sys/windows"
)

func cpuTime() (time.Duration, error) {
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u); err != nil {
		return 0, err
	}
	// FILETIME counts 100 ns ticks.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(k) + ticks(u)) * 100), nil
}
