//go:build linux

package disk

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// createFile makes the test file so that nothing can outlive the
// process, not even kill -9: an O_TMPFILE has no name from the start and
// the kernel frees it with the last descriptor. Where the filesystem
// refuses O_TMPFILE, a named file gets its marker and loses its name at
// once (unlinkat): only a kill in those microseconds leaves it, and
// FindStale can prove it is narrows' own.
func createFile(dir string, tail int64) (f *os.File, path string, err error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		f = os.NewFile(uintptr(fd), filepath.Join(dir, "(unnamed)"))
		if err = writeMarker(f, tail); err != nil {
			f.Close()
			return nil, "", err
		}
		return f, "", nil
	}
	if !tmpfileRefused(err) {
		return nil, "", &os.PathError{Op: "open", Path: dir, Err: err}
	}
	f, path, err = createNamed(dir, tail)
	if err != nil {
		return nil, "", err
	}
	if err := os.Remove(path); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, "", nil
}

// tmpfileRefused: the kernel or the filesystem does not do O_TMPFILE
// (EOPNOTSUPP from the filesystem; EISDIR or EINVAL from kernels before
// 3.11, which read the flag as O_DIRECTORY).
func tmpfileRefused(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL)
}
