//go:build !linux

package disk

import "os"

// createFile makes the named test file; Close removes it. Here the file
// keeps its name while it is open (the portable engine's dsync handle
// opens it again by name), so a run that is killed leaves it, marked:
// FindStale finds it and RemoveStale removes it.
func createFile(dir string, tail int64) (*os.File, string, error) {
	return createNamed(dir, tail)
}
