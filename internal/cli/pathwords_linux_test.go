package cli_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
)

// TestPathWords: every directory flag, given a path the user running
// narrows cannot use, says which of three things is wrong, as the OS said
// it: the path is not there (ENOENT), a file stands where a directory
// should (ENOTDIR), or this user may not enter or write it (EACCES) — and,
// for the last, names the directory that stops the user, its owner, and
// what to do. Before, doctor said `--log-path …/pg_wal: not a directory
// here` of a real pg_wal under a 0700 data directory. Run as nobody, on
// real directories laid out as PostgreSQL lays out its own.
func TestPathWords(t *testing.T) {
	itest.RequireRoot(t, "running as another user")
	owner := "root"
	uid, gid := 0, 0
	if u, err := user.Lookup("postgres"); err == nil {
		owner = u.Username
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	base := worldDir(t, false) // 0755, root's
	mk := func(path string, mode os.FileMode) string {
		t.Helper()
		if err := os.Mkdir(path, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// DATA is PostgreSQL's data directory (0700): nobody may not enter it,
	// so a stat of its pg_wal fails with EACCES.
	data := mk(filepath.Join(base, "main"), 0o700)
	wal := mk(filepath.Join(data, "pg_wal"), 0o700)
	// OPEN/wal: nobody may stat it (its parent is 0755) but not write it.
	open := mk(filepath.Join(base, "open"), 0o755)
	closed := mk(filepath.Join(open, "wal"), 0o700)
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(base, "none", "pg_wal")
	under := filepath.Join(file, "pg_wal")

	denied := func(blocker string) string {
		// The disk probe, which meets it creating its file, says so.
		return "permission denied( trying to create the test file)? " + regexp.QuoteMeta("for nobody: "+blocker+" is drwx------, owned by "+owner+": run narrows as "+owner+" (e.g. sudo -u "+owner+" narrows …), or give a directory nobody may write")
	}
	notThere := regexp.QuoteMeta(" does not exist")
	aFile := regexp.QuoteMeta(": " + file + " is a file, not a directory")
	type flagCase struct {
		name string
		args func(dir string) []string
	}
	flags := []flagCase{
		{"doctor --log-path", func(d string) []string { return []string{"doctor", "--log-path", d} }},
		{"doctor --data-path", func(d string) []string { return []string{"doctor", "--data-path", d} }},
		{"plan sync --log-path", func(d string) []string { return []string{"plan", "sync", "--log-path", d} }},
		{"plan backup --data-path", func(d string) []string {
			return []string{"plan", "backup", "--to", "127.0.0.1:1", "--data-path", d, "--backup-path", "/backup"}
		}},
		{"disk --path", func(d string) []string { return append([]string{"disk", "--path", d}, short...) }},
		{"serve --disk-path", func(d string) []string {
			return []string{"serve", "--listen", "127.0.0.1:0", "--disk-path", d}
		}},
	}
	paths := []struct {
		name, dir, want string
	}{
		{"under a 0700 directory (EACCES)", wal, denied(data)},
		{"a 0700 directory (not writable)", closed, denied(closed)},
		{"missing (ENOENT)", missing, notThere},
		{"under a file (ENOTDIR)", under, aFile},
	}
	for _, f := range flags {
		for _, p := range paths {
			t.Run(f.name+"/"+p.name, func(t *testing.T) {
				cmd := nobody(t, f.args(p.dir)...)
				cmd.Env = append(os.Environ(), "NARROWS_SECRET="+itest.Secret, "NARROWS_NO_HISTORY=1", "HOME=/nonexistent")
				cmd.Dir = base
				code, stderr := runExit(t, cmd)
				line := strings.TrimSuffix(stderr, "\n")
				if code != cli.ExitUsage || strings.Contains(line, "\n") || !regexp.MustCompile(regexp.QuoteMeta(p.dir)+".*"+p.want).MatchString(line) {
					t.Fatalf("exit %d, stderr %q; want exit 2 and one line naming %s and matching %q", code, stderr, p.dir, p.want)
				}
				// Each of the three says only its own words.
				for _, other := range []string{"not a directory here", "does not exist", "permission denied", "is a file, not a directory"} {
					if strings.Contains(line, other) && !strings.Contains(p.want, other) {
						t.Fatalf("%q says %q: %s", p.name, other, line)
					}
				}
				t.Log(line)
			})
		}
	}
}

// runExit runs cmd and returns its exit code and standard error.
func runExit(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var errb bytes.Buffer
	cmd.Stderr, cmd.Stdout = &errb, io.Discard
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), errb.String()
}
