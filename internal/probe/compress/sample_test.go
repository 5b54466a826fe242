package compress

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/errext"
)

// writeTree makes files under dir, each filled with its own byte value so
// the sample shows which files it came from.
func writeTree(t *testing.T, dir string, files map[string]int) {
	t.Helper()
	i := 0
	for name, size := range files {
		i++
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i)}, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// valuesIn counts the bytes of each value in the sample (files are
// filled with one value each: a value is a file).
func valuesIn(data []byte) map[byte]int {
	seen := map[byte]int{}
	for _, b := range data {
		seen[b]++
	}
	return seen
}

func TestReadSampleBoundAndSpread(t *testing.T) {
	dir := t.TempDir()
	files := map[string]int{}
	for i := range 40 {
		// Like a data directory: many segment files in a few folders.
		files[filepath.Join("base", string(rune('a'+i%4)), "seg"+string(rune('A'+i)))] = 512 << 10
	}
	writeTree(t, dir, files)
	s, err := ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 2 << 20, ChunkBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Data) > 2<<20 {
		t.Fatalf("read %d bytes, the bound is %d", len(s.Data), 2<<20)
	}
	if len(s.Data) < 2<<20*9/10 {
		t.Errorf("read %d bytes of a 2 MiB budget from a 20 MiB tree", len(s.Data))
	}
	// 32 chunks over 40 equal files: one chunk each from 32 of them, never
	// the first N bytes of one file.
	if got := len(valuesIn(s.Data)); got < 30 {
		t.Errorf("the sample came from %d files of 40", got)
	}
	a := s.About
	if a.Kind != "path" || a.FilesFound != 40 || a.FilesRead < 30 || a.TreeBytes != 40*512<<10 || a.Bytes != int64(len(s.Data)) {
		t.Errorf("the sample's description: %+v", a)
	}
	if !strings.Contains(a.What, "of 40 files") {
		t.Errorf("What = %q", a.What)
	}
	again, err := ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 2 << 20, ChunkBytes: 64 << 10})
	if err != nil || !bytes.Equal(again.Data, s.Data) {
		t.Errorf("the same tree gave a different sample (%v)", err)
	}
}

// A tree smaller than the budget is read whole; a single file can be
// sampled too.
func TestReadSampleWholeTreeAndFile(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]int{"a": 100_000, "sub/b": 30_000, "empty": 0})
	s, err := ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Data) != 130_000 || s.About.FilesFound != 2 || s.About.FilesRead != 2 {
		t.Errorf("read %d bytes from %d of %d files; want all 130000 from both", len(s.Data), s.About.FilesRead, s.About.FilesFound)
	}
	one, err := ReadSample(context.Background(), SampleConfig{Path: filepath.Join(dir, "sub", "b"), Bytes: 1 << 20})
	if err != nil || len(one.Data) != 30_000 {
		t.Errorf("sampling one file: %d bytes, %v", len(one.Data), err)
	}
}

// Symbolic links are never followed: a link to a file or a directory
// outside the tree brings nothing of it into the sample, and is counted.
func TestReadSampleDoesNotFollowLinksOutOfTheTree(t *testing.T) {
	base := t.TempDir()
	tree, outside := filepath.Join(base, "data"), filepath.Join(base, "secret")
	writeTree(t, tree, map[string]int{"base/1": 64 << 10})
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := bytes.Repeat([]byte{0xEE}, 256<<10)
	if err := os.WriteFile(filepath.Join(outside, "file"), secret, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		filepath.Join(tree, "pg_tblspc"): outside,                            // a tablespace
		filepath.Join(tree, "base", "2"): filepath.Join(outside, "file"),     // a file
		filepath.Join(tree, "up"):        filepath.Join("..", "secret", "."), // relative, up and out
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("cannot make symbolic links here: %v", err)
		}
	}
	s, err := ReadSample(context.Background(), SampleConfig{Path: tree, Bytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(s.Data, 0xEE) >= 0 {
		t.Fatal("the sample holds bytes from outside the tree")
	}
	if len(s.Data) != 64<<10 || s.About.SymlinksSkipped != 3 {
		t.Errorf("read %d bytes, %d links skipped; want the 65536 bytes inside and 3 links", len(s.Data), s.About.SymlinksSkipped)
	}
	if !strings.Contains(s.About.What, "3 symbolic links not followed") {
		t.Errorf("What does not say links were skipped: %q", s.About.What)
	}
	// The path named may itself be a link (a data directory linked to
	// its disk): that one is followed, it is the tree asked for.
	link := filepath.Join(base, "link-to-data")
	if err := os.Symlink(tree, link); err != nil {
		t.Fatal(err)
	}
	viaLink, err := ReadSample(context.Background(), SampleConfig{Path: link, Bytes: 4 << 20})
	if err != nil || !bytes.Equal(viaLink.Data, s.Data) || viaLink.About.Path != s.About.Path {
		t.Errorf("through a link to the tree: %d bytes from %q, %v", len(viaLink.Data), viaLink.About.Path, err)
	}
}

// Sampling changes nothing: no file's size or modification time, and no
// file added.
func TestReadSampleNeverWrites(t *testing.T) {
	dir := t.TempDir()
	files := map[string]int{}
	for i := range 12 {
		files[filepath.Join("base", "16384", string(rune('a'+i)))] = 300_000 + i*1000
	}
	writeTree(t, dir, files)
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	type state struct {
		size  int64
		mtime time.Time
	}
	snapshot := func() map[string]state {
		m := map[string]state{}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			m[p] = state{fi.Size(), fi.ModTime()}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for name := range files {
		if err := os.Chtimes(filepath.Join(dir, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot()
	if _, err := ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20, ChunkBytes: 32 << 10}); err != nil {
		t.Fatal(err)
	}
	after := snapshot()
	if len(after) != len(before) {
		t.Fatalf("the tree had %d entries, now %d", len(before), len(after))
	}
	for p, b := range before {
		if a := after[p]; a.size != b.size || !a.mtime.Equal(b.mtime) {
			t.Errorf("%s changed: size %d → %d, mtime %v → %v", p, b.size, a.size, b.mtime, a.mtime)
		}
	}
}

func TestReadSampleErrors(t *testing.T) {
	empty := t.TempDir()
	if err := os.MkdirAll(filepath.Join(empty, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, empty, map[string]int{"zero-length": 0})
	onlyLink := t.TempDir()
	if err := os.Symlink(empty, filepath.Join(onlyLink, "elsewhere")); err != nil && runtime.GOOS != "windows" {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		bytes      int64
		want       string
	}{
		{"empty tree", empty, 0, "nothing to sample under " + empty + ": no regular file holds any data"},
		{"only links", onlyLink, 0, "symbolic links were not followed"},
		{"no such path", filepath.Join(empty, "nope"), 0, "does not exist"},
		{"no path", "", 0, "no path to sample"},
		{"too big", empty, MaxSampleBytes + 1, "more than the most narrows holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "only links" && runtime.GOOS == "windows" {
				t.Skip("symbolic links need privileges on Windows")
			}
			_, err := ReadSample(context.Background(), SampleConfig{Path: tc.path, Bytes: tc.bytes})
			if !errext.IsUser(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want a UserError with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error is more than one line: %q", err)
			}
		})
	}
}

// Files that cannot be opened are skipped and counted; when none can be,
// the error says why and what to do.
func TestReadSampleUnreadable(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs file permissions that bind (not root, not Windows)")
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]int{"a": 100_000, "b": 100_000})
	if err := os.Chmod(filepath.Join(dir, "a"), 0); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20})
	if err != nil || len(s.Data) != 100_000 || s.About.FilesUnreadable != 1 || !strings.Contains(s.About.What, "1 could not be read") {
		t.Fatalf("one file of two unreadable: %d bytes, %+v, %v", len(s.Data), s.About, err)
	}
	if err := os.Chmod(filepath.Join(dir, "b"), 0); err != nil {
		t.Fatal(err)
	}
	_, err = ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "cannot read any of the files sampled under "+dir+" (permission denied): run narrows as a user who can read them") {
		t.Fatalf("err = %v", err)
	}
	// A directory inside the tree that cannot be listed.
	sub := filepath.Join(dir, "base")
	writeTree(t, sub, map[string]int{"c": 1000})
	if err := os.Chmod(sub, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(sub, 0o755)
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	_, err = ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "cannot list 1 of the directories under "+dir+" (permission denied): run narrows as a user") {
		t.Fatalf("unreadable subdirectory: err = %v", err)
	}
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	_, err = ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "permission denied: run narrows as a user who can read it") {
		t.Fatalf("unreadable directory: err = %v", err)
	}
}

// As root, permissions do not bind: the same errors come from a file
// that fails to open (the seam is the OS call, nothing else).
func TestReadSampleUnreadableSeam(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]int{"a": 100_000, "b": 100_000})
	real := openRead
	t.Cleanup(func() { openRead = real })
	openRead = func(path string) (*os.File, error) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
	}
	_, err := ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "cannot read any of the files sampled under "+dir+" (permission denied)") {
		t.Fatalf("err = %v", err)
	}
	openRead = func(path string) (*os.File, error) {
		if filepath.Base(path) == "a" {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
		}
		return real(path)
	}
	s, err := ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20})
	if err != nil || len(s.Data) != 100_000 || s.About.FilesUnreadable != 1 {
		t.Fatalf("one file of two unreadable: %d bytes, %+v, %v", len(s.Data), s.About, err)
	}
}

func TestReadSampleInterrupted(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]int{"a": 100_000})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadSample(ctx, SampleConfig{Path: dir}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
}
