package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/wire"
)

// DiskRoot is one directory the operator allows disk tests in: as given
// (made absolute) and with its symbolic links resolved, once, at start.
type DiskRoot struct {
	Given, Real string
}

// ResolveDiskPaths checks the agent's --disk-path directories: each must
// exist and be a directory now. A directory named twice is kept once; two
// names of one directory (one a symbolic link) are both kept, so that a
// client may use either.
func ResolveDiskPaths(dirs []string) ([]DiskRoot, error) {
	var roots []DiskRoot
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" {
			return nil, errors.New("--disk-path: give a directory")
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("--disk-path %s: %v", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(real); err == nil && !fi.IsDir() {
				return nil, fmt.Errorf("--disk-path %s is not a directory: name the directories clients may measure (e.g. the backup destination)", d)
			}
		}
		if err == nil {
			// Every disk test creates its file there: an agent whose user
			// may not write it would refuse every client later.
			if err := probe.CheckDir("--disk-path", d, true); err != nil {
				return nil, err
			}
		}
		if err != nil {
			if w, ok := probe.PathWords(abs, err); ok {
				return nil, fmt.Errorf("--disk-path %s%s", d, w)
			}
			return nil, fmt.Errorf("--disk-path %s: %v", d, unwrapPath(err))
		}
		if !seen[abs] {
			seen[abs] = true
			roots = append(roots, DiskRoot{Given: abs, Real: real})
		}
	}
	return roots, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// within says whether p is root or below it; both are clean and absolute.
// (filepath.Rel compares as the platform does: without case on Windows.)
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// diskPaths are the allowed directories as announced and named in refusals.
func (s *Server) diskPaths() []string {
	out := make([]string, len(s.cfg.DiskRoots))
	for i, r := range s.cfg.DiskRoots {
		out[i] = r.Given
	}
	return out
}

// allowed names the allowed directories, for a refusal.
func (s *Server) allowed() string {
	return strings.Join(s.diskPaths(), ", ") + " (its --disk-path)"
}

// diskDir checks a client's --path against the allowlist and returns it
// clean and resolved, or the refusal. It never looks at the filesystem outside the
// allowed directories: a path that is not lexically inside one (as given
// or as resolved) is refused before anything is resolved, so a client
// cannot learn what exists elsewhere. Inside, the path is resolved, and
// where it really leads must be inside one too: a symbolic link cannot
// lead out.
func (s *Server) diskDir(asked string) (clean, real string, _ *wire.RemoteError) {
	limit := func(format string, a ...any) (string, string, *wire.RemoteError) {
		return "", "", &wire.RemoteError{Code: wire.CodeLimit, Message: fmt.Sprintf(format, a...)}
	}
	if len(s.cfg.DiskRoots) == 0 {
		return limit("this agent runs no disk tests: its operator allows them by starting it with --disk-path DIR (repeatable), naming the directories clients may measure")
	}
	switch {
	case asked == "":
		return limit("--path is required: the agent allows disk tests in %s", s.allowed())
	case len(asked) > wire.MaxDiskPath:
		return limit("--path is %d bytes long: the agent takes at most %d", len(asked), wire.MaxDiskPath)
	case !filepath.IsAbs(asked):
		return limit("--path %s: give an absolute path on the agent, inside %s", asked, s.allowed())
	}
	for _, elem := range strings.FieldsFunc(filepath.ToSlash(asked), func(r rune) bool { return r == '/' }) {
		if elem == ".." {
			return limit("--path %s: \"..\" is not allowed; name the directory itself, inside %s", asked, s.allowed())
		}
	}
	clean = filepath.Clean(asked)
	if !s.inside(clean, true) {
		return limit("--path %s is outside the directories this agent allows disk tests in: %s", asked, s.allowed())
	}
	real, err := filepath.EvalSymlinks(clean)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return "", "", &wire.RemoteError{Code: wire.CodeRefused, Message: fmt.Sprintf("--path %s does not exist on the agent", asked)}
	case err != nil:
		if w, ok := probe.PathWords(clean, err); ok {
			return "", "", &wire.RemoteError{Code: wire.CodeRefused, Message: fmt.Sprintf("--path %s on the agent%s", asked, w)}
		}
		return "", "", &wire.RemoteError{Code: wire.CodeRefused, Message: fmt.Sprintf("--path %s on the agent: %v", asked, unwrapPath(err))}
	case !s.inside(real, false):
		return limit("--path %s leads to %s through a symbolic link, outside the directories this agent allows disk tests in: %s", asked, real, s.allowed())
	}
	return clean, real, nil
}

// inside says whether p is in one of the allowed directories: as they
// really are (symbolic links resolved), or also as given, for a path not
// resolved yet.
func (s *Server) inside(p string, asGiven bool) bool {
	for _, r := range s.cfg.DiskRoots {
		if within(r.Real, p) || (asGiven && within(r.Given, p)) {
			return true
		}
	}
	return false
}
