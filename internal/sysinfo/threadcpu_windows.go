//go:build windows

package sysinfo

import (
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// x/sys/windows has no wrapper for GetThreadTimes.
var procGetThreadTimes = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetThreadTimes")

func threadCPUTime() (time.Duration, error) {
	if err := procGetThreadTimes.Find(); err != nil {
		return 0, ErrUnavailable
	}
	var c, e, k, u windows.Filetime
	h := windows.CurrentThread() // a pseudo handle: nothing to close
	r, _, err := procGetThreadTimes.Call(uintptr(h), uintptr(unsafe.Pointer(&c)), uintptr(unsafe.Pointer(&e)),
		uintptr(unsafe.Pointer(&k)), uintptr(unsafe.Pointer(&u)))
	if r == 0 {
		return 0, err
	}
	// FILETIME counts 100 ns ticks; the thread's times advance by the
	// scheduler's tick (about 15.6 ms), a small error over a second.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(k) + ticks(u)) * 100), nil
}
