//go:build linux

package disk

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
)

// TestFileWithoutName: on ext4 (with O_DIRECT and io_uring), tmpfs and
// ramfs the test file never has a name: the directory stays empty while
// narrows measures, so no signal, not even kill -9, can leave it behind.
func TestFileWithoutName(t *testing.T) {
	cases := []struct {
		name   string
		dir    func(t *testing.T) string
		direct bool
	}{
		{"ext4 or the test's filesystem", func(t *testing.T) string { return t.TempDir() }, true},
		{"tmpfs", func(t *testing.T) string { return itest.Mount(t, "tmpfs", "size=32m") }, false},
		{"ramfs", func(t *testing.T) string { return itest.Mount(t, "ramfs", "") }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir(t)
			cfg := quick(dir, Pattern{Profile: result.ProfileData, RW: RandWrite, Block: 8 << 10, QD: 4, Threads: 1, Sync: result.SyncNone})
			tg, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			if err := tg.Layout(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := tg.Run(context.Background(), func(result.Interval) {}); err != nil {
				t.Fatal(err)
			}
			st, err := tg.f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(dir)
			if n := st.Sys().(*syscall.Stat_t).Nlink; n != 0 || len(entries) != 0 || tg.Path() != "" {
				t.Fatalf("the test file has %d links, the directory %v, Path %q: want no name at all", n, entries, tg.Path())
			}
			if c.direct && !tg.direct {
				t.Fatalf("no O_DIRECT on %s: %v", c.name, tg.Notes())
			}
			t.Logf("%s: direct %v, engine %s", c.name, tg.direct, tg.engine)
		})
	}
}

// leftover writes a test file as a run killed before it could remove it
// would leave it: named narrows-*.dat, bytes, then the marker.
func leftover(t *testing.T, dir, name string, pid int, host string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	m := fmt.Sprintf("%spid=%d\nhost=%s\nuid=%d\nstarted=2025-01-02T03:04:05Z\n", MarkerMagic, pid, host, os.Geteuid())
	b := make([]byte, 3*markerSize)
	copy(b[2*markerSize:], m)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// deadPID is the PID of a process that has run and gone.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestStale: of the files named like test files, only the ones narrows
// can prove a killed run of its own left are found and removed; the
// others are kept, whatever their name says.
func TestStale(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	dead := deadPID(t)
	ours := leftover(t, dir, "narrows-00000000000000aa.dat", dead, host)
	keep := map[string]string{
		"a live writer":   leftover(t, dir, "narrows-00000000000000bb.dat", os.Getpid(), host),
		"another host":    leftover(t, dir, "narrows-00000000000000cc.dat", dead, host+"-elsewhere"),
		"another's name":  leftover(t, dir, "data-00000000000000dd.dat", dead, host),
		"no marker":       filepath.Join(dir, "narrows-00000000000000ee.dat"),
		"a symbolic link": filepath.Join(dir, "narrows-00000000000000ff.dat"),
	}
	os.WriteFile(keep["no marker"], []byte(strings.Repeat("a database's own bytes ", 1000)), 0o600)
	os.Symlink(leftover(t, t.TempDir(), "narrows-0000000000000011.dat", dead, host), keep["a symbolic link"])
	if os.Geteuid() == 0 {
		p := leftover(t, dir, "narrows-0000000000000022.dat", dead, host)
		os.Chown(p, 65534, 65534)
		keep["another user's"] = p
	}
	found, err := FindStale(dir)
	if err != nil || len(found) != 1 || found[0].Path != ours || found[0].PID != dead || found[0].Bytes != 3*markerSize ||
		!found[0].Started.Equal(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("found %+v (%v), want only %s", found, err, ours)
	}
	gone, err := RemoveStale(dir)
	if err != nil || len(gone) != 1 || gone[0].Path != ours {
		t.Fatalf("removed %+v (%v)", gone, err)
	}
	if _, err := os.Lstat(ours); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", ours, err)
	}
	for why, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("%s (%s) was removed: %v", p, why, err)
		}
	}
	// The file a run writes carries the marker FindStale reads.
	f, path, err := createNamed(dir, 2*markerSize)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if found, _ := FindStale(dir); len(found) != 0 {
		t.Fatalf("a live run's own file was found stale: %+v", found)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b[2*markerSize:]), MarkerMagic+fmt.Sprintf("pid=%d\nhost=%s\n", os.Getpid(), host)) {
		t.Fatalf("marker %q", b[2*markerSize:])
	}
}

// TestSymlinkPath: --path through a symbolic link says where the file
// really goes, and the result names that directory.
func TestSymlinkPath(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "data")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, note string
	}{
		{link, "--path " + link + " leads to " + real + " through a symbolic link: the test file is written there"},
		{real, ""},
	} {
		tg, err := Open(quick(c.path, Profiles[result.ProfileBackup]()...))
		if err != nil {
			t.Fatal(err)
		}
		notes, d := strings.Join(tg.Notes(), "\n"), tg.Summary()
		tg.Close()
		if c.note != "" && !strings.Contains(notes, c.note) || c.note == "" && strings.Contains(notes, "symbolic link") || d.Path != real || tg.Dir() != real {
			t.Fatalf("--path %s: notes %q, path %q, dir %q; want %q in %s", c.path, notes, d.Path, tg.Dir(), c.note, real)
		}
	}
}
