//go:build unix

package probe

import (
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// mayUse asks the kernel whether this user may enter dir and, with write,
// create files in it: a stat succeeds on a directory of another user's
// that one may not write (pg_wal is 0700, its owner's alone).
func mayUse(dir string, write bool) error {
	mode := uint32(unix.R_OK | unix.X_OK)
	if write {
		mode = unix.W_OK | unix.X_OK
	}
	if err := unix.Access(dir, mode); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}

// currentUser is this process's user by name, else by number.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// ownerOf is the name of the user who owns fi, "" when unknown.
func ownerOf(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	id := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username
	}
	return "uid " + id
}
