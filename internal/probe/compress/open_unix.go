//go:build unix && !linux

package compress

import (
	"errors"
	"os"
	"syscall"
)

// openRead opens a file to sample: read only, never through a symbolic
// link (one put in place since the walk), without blocking on a FIFO.
var openRead = func(path string) (*os.File, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), path), nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ELOOP):
			return nil, &os.PathError{Op: "open", Path: path, Err: errLink}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
}
