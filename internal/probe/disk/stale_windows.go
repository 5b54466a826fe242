//go:build windows

package disk

import (
	"io/fs"
	"time"

	"golang.org/x/sys/windows"
)

// ownedByMe: Windows has no uid; the marker's uid is os.Geteuid (-1)
// there, and the file was created in a directory this user chose.
func ownedByMe(fi fs.FileInfo) bool { return true }

// Windows hands a freed process ID out again soon (Wine at once: the
// next process often gets the killed run's), so a process that began
// after the marker's writer had started (started is to the second) is
// another one, and the writer is gone.
func processAlive(pid int, started time.Time) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return err == windows.ERROR_ACCESS_DENIED
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	if code != 259 { // STILL_ACTIVE
		return false
	}
	var created, exited, kernel, user windows.Filetime
	if started.IsZero() || windows.GetProcessTimes(h, &created, &exited, &kernel, &user) != nil {
		return true
	}
	return !time.Unix(0, created.Nanoseconds()).After(started.Add(time.Second))
}
