package compress

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// On Linux the sample is read with O_NOATIME where the kernel allows it
// (the owner, or root): even the access times stay as they were, though
// relatime would update a day-old one.
func TestReadSampleKeepsAccessTimes(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]int{"a": 200_000, "b/c": 200_000})
	old := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	atime := func(p string) time.Time {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	for _, name := range []string{"a", "b/c"} {
		p := filepath.Join(dir, name)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadSample(context.Background(), SampleConfig{Path: dir, Bytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b/c"} {
		if got := atime(filepath.Join(dir, name)); !got.Equal(old) {
			t.Errorf("%s: access time %v, was %v", name, got, old)
		}
	}
}
