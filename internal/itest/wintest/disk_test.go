//go:build linux

package wintest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// diskRun runs `narrows.exe disk` on dir with args and --json, and
// returns the summary's disk object and its patterns by name; it fails
// the test unless the run succeeded and left dir empty.
func diskRun(t *testing.T, w *itest.Wine, dir string, args ...string) (map[string]any, map[string]map[string]any) {
	t.Helper()
	full := append([]string{"disk", "--path", w.Path(dir), "--size", "16M", "--duration", "1s", "--json"}, args...)
	r := w.Run(t, time.Minute, nil, full...)
	if r.Code != 0 {
		t.Fatalf("narrows.exe %s: exit %d\nstderr:\n%s", strings.Join(full, " "), r.Code, r.Stderr)
	}
	emptyDir(t, dir, full)
	_, sum := itest.Records(t, r.Stdout)
	d := itest.Obj(sum, "disk")
	byName := map[string]map[string]any{}
	ps, _ := d["patterns"].([]any)
	for _, p := range ps {
		pm := p.(map[string]any)
		byName[pm["name"].(string)] = pm
		if n, _ := itest.Num(pm, "ios"); n <= 0 || pm["stopped"] != nil {
			t.Errorf("%s: pattern %q did %v I/Os (stopped: %v), want some and a whole run", strings.Join(full, " "), pm["name"], n, pm["stopped"])
		}
	}
	return d, byName
}

// emptyDir: nothing the run created outlives it.
func emptyDir(t *testing.T, dir string, args []string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("narrows.exe %s left %s behind", strings.Join(args, " "), e.Name())
	}
}

// want checks the summary's words for how the I/O was done.
func want(t *testing.T, d map[string]any, engine string, direct bool) {
	t.Helper()
	io := itest.Obj(d, "io")
	if d["engine"] != engine || d["direct"] != direct || io["direct"] != "FILE_FLAG_NO_BUFFERING" ||
		io["dsync"] != "FILE_FLAG_WRITE_THROUGH" || io["flush"] != "FlushFileBuffers" || io["cache"] != "system file cache" {
		t.Errorf("recorded engine %v, direct %v, io %v; want engine %s, direct %v and Windows' words", d["engine"], d["direct"], io, engine, direct)
	}
}

// TestDiskOnWindows: the profiles' shapes through Windows' own file
// interfaces — FILE_FLAG_NO_BUFFERING handles, overlapped I/O on a
// completion port at queue depth 8, FlushFileBuffers after each log write
// and FILE_FLAG_WRITE_THROUGH — each run to its end with I/O counted, said
// in the result as it was done, its test file gone. Wine takes the flags
// and runs the I/O through Linux's page cache (it opens the file without
// O_DIRECT or O_DSYNC; FlushFileBuffers is an fsync): so this checks the
// calls and the accounting, not Windows' timing.
func TestDiskOnWindows(t *testing.T) {
	w := itest.NewWine(t)
	// Two at a time (Wine's start costs more than the patterns), each in
	// a directory of its own.
	t.Run("data and backup", func(t *testing.T) {
		t.Parallel()
		// Data pages at QD 8 through the completion port, and backup's
		// streams: three patterns in one run.
		d, ps := diskRun(t, w, t.TempDir(), "--profile", "backup,custom", "--rw", "mix", "--block", "8K", "--qd", "8")
		want(t, d, "iocp", true)
		for _, name := range []string{"mix 70/30 8 KiB QD8", "read 1 MiB QD8", "write 1 MiB QD8"} {
			p := ps[name]
			if p == nil {
				t.Errorf("no pattern %q in %v", name, ps)
				continue
			}
			if n, _ := itest.Num(p, "queue_depth"); n != 8 {
				t.Errorf("%s: queue depth %v, want 8", name, n)
			}
		}
		if m := ps["mix 70/30 8 KiB QD8"]; m != nil {
			r, _ := itest.Num(itest.Obj(m, "read"), "ios")
			wr, _ := itest.Num(itest.Obj(m, "write"), "ios")
			if r <= wr || wr <= 0 {
				t.Errorf("mix 70/30 did %v reads and %v writes, want both, more reads", r, wr)
			}
		}
	})
	t.Run("log", func(t *testing.T) {
		t.Parallel()
		// The log profile: a write, then FlushFileBuffers, each commit
		// timed whole and in its parts; and as SQL Server writes its log,
		// write-through, each write durable when it returns.
		d, ps := diskRun(t, w, t.TempDir(), "--profile", "log", "--duration", "400ms")
		want(t, d, "iocp", true)
		for _, kb := range []string{"8", "16", "60"} {
			p := ps["write "+kb+" KiB + FlushFileBuffers"]
			if p == nil {
				t.Errorf("no %s KiB pattern named for FlushFileBuffers in %v", kb, ps)
				continue
			}
			f, _ := itest.Num(p, "flushes")
			n, _ := itest.Num(p, "ios")
			fl, _ := itest.Num(itest.Obj(p, "flush_latency"), "latency_p50_seconds")
			wl, _ := itest.Num(itest.Obj(p, "write_latency"), "latency_p50_seconds")
			if p["sync"] != "fdatasync" || f != n || fl <= 0 || wl <= 0 {
				t.Errorf("%s: sync %v, %v flushes of %v writes, flush p50 %v s, write p50 %v s", p["name"], p["sync"], f, n, fl, wl)
			}
			if p := ps["write "+kb+" KiB write-through"]; p == nil || p["sync"] != "dsync" {
				t.Errorf("no %s KiB write-through pattern with sync dsync in %v", kb, ps)
			}
		}
	})
	t.Run("portable", func(t *testing.T) {
		t.Parallel()
		// The portable engine, buffered, says so.
		d, _ := diskRun(t, w, t.TempDir(), "--engine", "portable", "--buffered", "--rw", "randread", "--qd", "4", "--duration", "500ms")
		want(t, d, "portable", false)
	})
	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		// A run killed outright leaves its named file, marked; the next
		// run names it and --clean-stale proves it abandoned (Wine gives
		// the next process the killed one's ID: the marker's start time
		// tells them apart) and removes it.
		dir := t.TempDir()
		cmd := w.Command("disk", "--path", w.Path(dir), "--size", "16M", "--profile", "data", "--duration", "30s")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		defer cmd.Process.Kill()
		var left []string
		for end := time.Now().Add(30 * time.Second); len(left) == 0 && time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			left, _ = filepath.Glob(filepath.Join(dir, "narrows-*.dat"))
		}
		if len(left) != 1 {
			t.Fatalf("the run made %v in %s, want one test file", left, dir)
		}
		time.Sleep(1500 * time.Millisecond) // laid out, measuring, and a second past its start
		cmd.Process.Kill()
		cmd.Wait()
		b, err := os.ReadFile(left[0])
		if err != nil || !bytes.Contains(b[max(len(b)-4096, 0):], []byte("narrows disk test file\npid=")) {
			t.Fatalf("the killed run's file %s (%v) does not end in its marker", left[0], err)
		}
		r := w.Run(t, time.Minute, nil, "disk", "--path", w.Path(dir), "--clean-stale")
		if r.Code != 0 || !strings.Contains(r.Stdout, "removed "+w.Path(left[0])) {
			t.Errorf("--clean-stale: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
		}
		emptyDir(t, dir, []string{"--clean-stale"})
	})
	t.Run("mistakes", func(t *testing.T) {
		t.Parallel()
		// One line (Wine's own notices aside), exit code 2, nothing left.
		dir := t.TempDir()
		for _, c := range []struct {
			args []string
			says string
		}{
			{[]string{"--block", "6K"}, "FILE_FLAG_NO_BUFFERING needs a multiple of 4K"},
			{[]string{"--engine", "io_uring"}, "io_uring is Linux's"},
		} {
			full := append([]string{"disk", "--path", w.Path(dir), "--size", "16M", "--duration", "1s"}, c.args...)
			r := w.Run(t, time.Minute, nil, full...)
			lines := ownLines(r.Stderr)
			if r.Code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.says) {
				t.Errorf("narrows.exe %s: exit %d, stderr %q; want exit 2 and one line saying %q", strings.Join(full, " "), r.Code, r.Stderr, c.says)
			}
			emptyDir(t, dir, full)
		}
	})
}

// TestDiskPackageOnWindows runs the disk package's own tests built for
// Windows: the engines in process (every shape, their handles closed and
// the file gone), the clock I/O is timed by, the marker's process check
// against Wine's reused process IDs, and the names and checks in
// Windows' words.
func TestDiskPackageOnWindows(t *testing.T) {
	packageTestsOnWindows(t, packageTests{pkg: "./internal/probe/disk", all: true,
		tests: []string{"TestEngines", "TestClock", "TestProcessAlive", "TestSectorRefusal", "TestProfiles"}})
}
