//go:build !unix

package agent

import (
	"path/filepath"
	"strings"
)

// fsKey names the filesystem that holds dir: its volume (C:, \\server\share).
func fsKey(dir string) string {
	if v := filepath.VolumeName(dir); v != "" {
		return strings.ToUpper(v)
	}
	return dir
}
