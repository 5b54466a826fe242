package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// PathWords says why a directory a person named cannot be used, from what
// the OS said when narrows stat'ed, opened or created something in it:
// the words follow "FLAG PATH" and begin with their own separator
// (" does not exist: …", ": permission denied …"). It tells apart a path
// that is not there (ENOENT), one with a file where a directory should be
// (ENOTDIR), and one this user may not enter or write (EACCES, EPERM):
// "not a directory" said of a directory one may not enter sends a DBA
// looking for a mistake that is not there. ok is false for any other
// error, which the caller words itself.
func PathWords(path string, err error) (words string, ok bool) {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return ": permission denied" + permissionWords(path), true
	case errors.Is(err, syscall.ENOTDIR):
		if f := fileOnTheWay(path); f != "" {
			return fmt.Sprintf(": %s is a file, not a directory: give the directory itself", f), true
		}
		return ": a part of the path is a file, not a directory: give the directory itself", true
	case errors.Is(err, fs.ErrNotExist):
		if e := deepestThere(path); e != "" && e != path {
			return fmt.Sprintf(" does not exist (nothing on the way below %s): create it, or give a directory that does", e), true
		}
		return " does not exist: create it, or give a directory that does", true
	}
	return "", false
}

// CheckDir is the check every command makes of a directory flag before it
// measures: that path is a directory this user may enter and, with write,
// create files in. Its error is a *UserError in PathWords' words.
func CheckDir(flag, path string, write bool) error {
	fi, err := os.Stat(path)
	if err == nil && !fi.IsDir() {
		return UserErrorf(nil, "%s %s is not a directory (a file): give the directory itself", flag, path)
	}
	if err == nil {
		err = mayUse(path, write)
	}
	if err == nil {
		return nil
	}
	if w, ok := PathWords(path, err); ok {
		return UserErrorf(err, "%s %s%s", flag, path, w)
	}
	return UserErrorf(err, "%s %s: %v", flag, path, unwrapPath(err))
}

// permissionWords names the directory that stops this user and says what
// to do: run as its owner, or name a directory this user may write.
func permissionWords(path string) string {
	me := currentUser()
	block := blocker(path)
	if block == "" {
		return fmt.Sprintf(" for %s: run narrows as a user who may write there (the database's OS user, e.g. sudo -u postgres narrows …), or give a directory %s may write", me, me)
	}
	fi, err := os.Stat(block)
	if err != nil {
		return fmt.Sprintf(" for %s at %s: run narrows as a user who may write there (the database's OS user), or give a directory %s may write", me, block, me)
	}
	owner := ownerOf(fi)
	if owner == "" {
		return fmt.Sprintf(" for %s: %s is %s: run narrows as a user who may write there (the database's OS user), or give a directory %s may write", me, block, fi.Mode(), me)
	}
	sudo := owner
	if id, isID := strings.CutPrefix(owner, "uid "); isID {
		sudo = "'#" + id + "'"
	}
	return fmt.Sprintf(" for %s: %s is %s, owned by %s: run narrows as %s (e.g. sudo -u %s narrows …), or give a directory %s may write", me, block, fi.Mode(), owner, owner, sudo, me)
}

// blocker is the first directory on the way to path (path included) that
// this user may not enter or write, or "" when none can be found.
func blocker(path string) string {
	chain := chainOf(path)
	for i, p := range chain {
		if i+1 < len(chain) {
			// p must be entered to reach the next one.
			if _, err := os.Stat(chain[i+1]); errors.Is(err, fs.ErrPermission) {
				return p
			}
			continue
		}
		if mayUse(p, true) != nil {
			return p
		}
	}
	return ""
}

// fileOnTheWay is the first part of path that is a file, not a directory.
func fileOnTheWay(path string) string {
	for _, p := range chainOf(path) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// chainOf is path made absolute and every directory above it, from the
// root down to path.
func chainOf(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	var chain []string
	for p := abs; ; p = filepath.Dir(p) {
		chain = append([]string{p}, chain...)
		if filepath.Dir(p) == p {
			return chain
		}
	}
}

// deepestThere is the deepest existing directory on the way to path.
func deepestThere(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if filepath.Dir(p) == p {
			return ""
		}
	}
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
