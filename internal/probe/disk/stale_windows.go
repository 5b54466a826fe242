//go:build windows

package disk

import (
	"io/fs"

	"golang.org/x/sys/windows"
)

// ownedByMe: Windows has no uid; the marker's uid is os.Geteuid (-1)
// there, and the file was created in a directory this user chose.
func ownedByMe(fi fs.FileInfo) bool { return true }

func processAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return err == windows.ERROR_ACCESS_DENIED
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == 259 // STILL_ACTIVE
}
