//go:build unix

package disk

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
)

func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// processAlive: signal 0 reaches a process that exists (EPERM: it exists
// and belongs to someone else). A reused PID reads as alive: the file is
// then kept, never removed by mistake.
func processAlive(pid int, started time.Time) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
