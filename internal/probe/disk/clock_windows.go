//go:build windows

package disk

import (
	"time"
	"unsafe"
)

// clockNow is the time by QueryPerformanceCounter, as DiskSpd times its I/O:
// Go's own clock on Windows reads the interrupt time, which moves only at
// each timer tick (15.6 ms by default, 1 ms at best), coarser than the
// I/O it would time. The result carries base's monotonic reading plus the
// counter's count since, so it compares and subtracts as time.Now's do.
func clockNow() time.Time {
	if qpc.freq <= 0 {
		return time.Now()
	}
	var c int64
	procQueryPerformanceCounter.Call(uintptr(unsafe.Pointer(&c)))
	d := c - qpc.start
	return qpc.base.Add(time.Duration(d/qpc.freq)*time.Second + time.Duration(d%qpc.freq*int64(time.Second)/qpc.freq))
}

var (
	procQueryPerformanceCounter   = kernel32.NewProc("QueryPerformanceCounter")
	procQueryPerformanceFrequency = kernel32.NewProc("QueryPerformanceFrequency")
	qpc                           struct {
		freq, start int64
		base        time.Time
	}
)

func init() {
	var f int64
	if r, _, _ := procQueryPerformanceFrequency.Call(uintptr(unsafe.Pointer(&f))); r == 0 || f <= 0 {
		return // no counter: time.Now
	}
	if r, _, _ := procQueryPerformanceCounter.Call(uintptr(unsafe.Pointer(&qpc.start))); r == 0 {
		return
	}
	qpc.base, qpc.freq = time.Now(), f
}
