//go:build !unix && !windows

package disk

import (
	"io/fs"
	"time"
)

// Without a way to tell, a file is never proven abandoned.
func ownedByMe(fi fs.FileInfo) bool                { return false }
func processAlive(pid int, started time.Time) bool { return true }
