//go:build linux

package itest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/testenv"
)

// SkipOrFail skips t with the reason, or fails it where the host's
// facilities are required (testenv.Host).
func SkipOrFail(t testing.TB, format string, a ...any) {
	t.Helper()
	testenv.Need(t, testenv.Host, format, a...)
}

// RequireRoot skips t (fails under CI=true) unless it runs as root.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "%s needs root", why)
	}
}

// Mount mounts a fresh filesystem of type fstype (tmpfs, ramfs, ...) with
// options on a new directory and unmounts it at the end of the test.
func Mount(t testing.TB, fstype, options string) string {
	t.Helper()
	RequireRoot(t, "mounting "+fstype)
	dir := filepath.Join(t.TempDir(), fstype)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(fstype, dir, fstype, 0, options); err != nil {
		SkipOrFail(t, "cannot mount %s here: %v", fstype, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// RemountReadOnly makes a mount from Mount read-only.
func RemountReadOnly(t testing.TB, dir string) {
	t.Helper()
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}

// LoopDevice attaches image to a free loop device (losetup) and detaches
// it at the end of the test.
func LoopDevice(t testing.TB, image string) string {
	t.Helper()
	RequireRoot(t, "a loop device")
	out, err := exec.Command("losetup", "--find", "--show", image).CombinedOutput()
	if err != nil {
		SkipOrFail(t, "cannot attach a loop device: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "--detach", dev).Run() })
	return dev
}

// MountImage makes a filesystem with mkfs (e.g. mkfs.xfs) on an image
// file of size bytes, mounts it through a loop device on a new directory
// and unmounts it at the end of the test.
func MountImage(t testing.TB, mkfs, fstype string, size int64) string {
	t.Helper()
	RequireRoot(t, "mounting "+fstype)
	if _, err := exec.LookPath(mkfs); err != nil {
		SkipOrFail(t, "%s is not installed (scripts/deps.sh installs it)", mkfs)
	}
	image := filepath.Join(t.TempDir(), fstype+".img")
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", image).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", mkfs, err, out)
	}
	dev := LoopDevice(t, image)
	dir := filepath.Join(t.TempDir(), fstype)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dev, dir, fstype, 0, ""); err != nil {
		SkipOrFail(t, "cannot mount %s here: %v", fstype, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// DatFiles lists the narrows-*.dat files in dir.
func DatFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "narrows-*.dat"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FillTo fills the filesystem under dir with a file named filler, as
// another writer would, until only free bytes of it are left (the last
// write comes up short; the file then gives back what it must).
func FillTo(t testing.TB, dir string, free int64) {
	t.Helper()
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	chunk := make([]byte, 1<<20)
	var n int64
	for {
		k, err := filler.Write(chunk)
		n += int64(k)
		if err != nil {
			break
		}
	}
	if err := filler.Truncate(max(n-free, 0)); err != nil {
		t.Fatal(err)
	}
}
