package compress

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openRead opens a file to sample: read only, never through a symbolic
// link (one put in place since the walk), without blocking on a FIFO, and
// without updating its access time where the kernel allows it (O_NOATIME
// is for the file's owner and CAP_FOWNER; others are refused with EPERM).
var openRead = func(path string) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOATIME
	for {
		fd, err := unix.Open(path, flags, 0)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), path), nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EPERM) && flags&unix.O_NOATIME != 0:
			flags &^= unix.O_NOATIME
			continue
		case errors.Is(err, unix.ELOOP):
			return nil, &os.PathError{Op: "open", Path: path, Err: errLink}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
}
