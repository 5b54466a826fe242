//go:build unix

package agent

import (
	"fmt"
	"os"
	"syscall"
)

// fsKey names the filesystem that holds dir: its device number.
func fsKey(dir string) string {
	fi, err := os.Stat(dir)
	if err != nil {
		return dir
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("dev %d", st.Dev)
	}
	return dir
}
