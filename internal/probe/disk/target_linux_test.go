//go:build linux

package disk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"

	"github.com/narrows/narrows/internal/errext"
)

// quick is a short run: a few hundred milliseconds per pattern.
func quick(dir string, ps ...Pattern) Config {
	return Config{Dir: dir, Size: 8 << 20, Patterns: ps, Duration: 150 * time.Millisecond, Interval: 50 * time.Millisecond,
		Engine: EngineAuto, Seed: 1}
}

// measure opens, lays out, runs and closes, as the CLI does.
func measure(t *testing.T, cfg Config) (*result.Disk, []result.Interval) {
	t.Helper()
	tg, err := Open(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer tg.Close()
	if err := tg.Layout(context.Background()); err != nil {
		t.Fatalf("layout: %v", err)
	}
	var ivs []result.Interval
	res, err := tg.Run(context.Background(), func(iv result.Interval) { ivs = append(ivs, iv) })
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := tg.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return res, ivs
}

func requireURing(t *testing.T) {
	t.Helper()
	if reason := uringUnusable(); reason != "" {
		itest.SkipOrFail(t, "io_uring unusable here: %s", reason)
	}
}

// TestEveryProfileRuns runs each profile, and custom shapes, briefly on a
// real directory with both engines, and checks the figures hang together
// and the directory is left as it was.
func TestEveryProfileRuns(t *testing.T) {
	custom := []Pattern{
		{Profile: result.ProfileCustom, RW: RandWrite, Block: 4 << 10, QD: 4, Threads: 2, Sync: result.SyncNone},
		{Profile: result.ProfileCustom, RW: Write, Block: 8 << 10, QD: 1, Threads: 2, Sync: result.SyncFdatasync},
		{Profile: result.ProfileCustom, RW: RandWrite, Block: 4 << 10, QD: 4, Threads: 1, Sync: result.SyncDsync},
		{Profile: result.ProfileCustom, RW: Mix, ReadPercent: 50, Block: 16 << 10, QD: 2, Threads: 1, Sync: result.SyncNone},
	}
	for _, engine := range []string{EngineURing, EnginePortable} {
		for _, profile := range []string{result.ProfileData, result.ProfileLog, result.ProfileBackup, result.ProfileCustom} {
			t.Run(engine+"/"+profile, func(t *testing.T) {
				if engine == EngineURing {
					requireURing(t)
				}
				ps := custom
				if profile != result.ProfileCustom {
					ps = Profiles[profile]()
				}
				dir := t.TempDir()
				cfg := quick(dir, ps...)
				cfg.Engine = engine
				res, ivs := measure(t, cfg)
				if res.Engine != engine || !res.Direct || res.Filesystem == "" {
					t.Fatalf("engine %q direct %v filesystem %q", res.Engine, res.Direct, res.Filesystem)
				}
				if len(res.Patterns) != len(ps) {
					t.Fatalf("%d patterns measured, want %d", len(res.Patterns), len(ps))
				}
				for i, p := range res.Patterns {
					checkPattern(t, ps[i], p)
				}
				if len(ivs) < len(ps) {
					t.Fatalf("%d interval records for %d patterns", len(ivs), len(ps))
				}
				for _, iv := range ivs {
					if iv.Probe != "disk" || iv.Disk == nil || iv.End <= iv.Start {
						t.Fatalf("interval record %+v", iv)
					}
				}
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Fatalf("left behind: %v", left)
				}
			})
		}
	}
}

func checkPattern(t *testing.T, want Pattern, p result.DiskPattern) {
	t.Helper()
	if p.Name != want.Name() || p.Stopped != "" {
		t.Fatalf("pattern %q (stopped %q), want %q", p.Name, p.Stopped, want.Name())
	}
	if p.IOs <= 0 || p.IOPS <= 0 || p.Bytes != p.IOs*want.Block || p.Throughput <= 0 {
		t.Fatalf("%s: %d I/Os, %v IOPS, %d bytes", p.Name, p.IOs, p.IOPS, p.Bytes)
	}
	if !(p.Min > 0 && p.Min <= p.P50 && p.P50 <= p.P90 && p.P90 <= p.P99 && p.P99 <= p.P999 && p.P999 <= p.Max) {
		t.Fatalf("%s: latencies out of order: %+v", p.Name, p.Latencies)
	}
	if p.CPUUnavailable != "" || p.CPU <= 0 {
		t.Fatalf("%s: cpu %v (%s)", p.Name, p.CPU, p.CPUUnavailable)
	}
	switch want.Sync {
	case result.SyncFdatasync:
		if p.Flushes != p.IOs || p.WriteLatency == nil || p.FlushLatency == nil || p.FlushLatency.P50 <= 0 {
			t.Fatalf("%s: flushes %d of %d, write %v flush %v", p.Name, p.Flushes, p.IOs, p.WriteLatency, p.FlushLatency)
		}
		// A commit is the write plus the flush: never less than either.
		if p.P50 < p.FlushLatency.P50 || p.P50 < p.WriteLatency.P50 {
			t.Fatalf("%s: commit p50 %v below write %v or flush %v", p.Name, p.P50, p.WriteLatency.P50, p.FlushLatency.P50)
		}
	case result.SyncDsync:
		if p.Flushes != p.IOs || p.FlushRate <= 0 || p.FlushLatency != nil {
			t.Fatalf("%s: dsync flushes %d rate %v", p.Name, p.Flushes, p.FlushRate)
		}
	}
	if want.RW == Mix {
		if p.Read == nil || p.Write == nil || p.Read.IOs+p.Write.IOs != p.IOs {
			t.Fatalf("%s: mix split %+v %+v of %d", p.Name, p.Read, p.Write, p.IOs)
		}
		if p.IOs > 500 {
			share := 100 * float64(p.Read.IOs) / float64(p.IOs)
			if share < float64(want.ReadPercent)-10 || share > float64(want.ReadPercent)+10 {
				t.Fatalf("%s: %.0f%% reads", p.Name, share)
			}
		}
	}
}

// TestExistingFilesUntouched: files already in the directory, one of them
// named like a test file, keep their content, times and mode.
func TestExistingFilesUntouched(t *testing.T) {
	dir := t.TempDir()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	files := map[string][]byte{
		"narrows-0123456789abcdef.dat": bytes.Repeat([]byte("a database's own bytes "), 1000),
		"base.mdf":                     bytes.Repeat([]byte{0xde, 0xad}, 5000),
	}
	type state struct {
		sum  [32]byte
		mode os.FileMode
		mod  time.Time
	}
	snap := func() map[string]state {
		m := map[string]state{}
		for name := range files {
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(p)
			m[name] = state{sha256.Sum256(b), fi.Mode(), fi.ModTime()}
		}
		return m
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o640); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	before := snap()
	measure(t, quick(dir,
		Pattern{Profile: result.ProfileCustom, RW: RandWrite, Block: 4 << 10, QD: 8, Threads: 2, Sync: result.SyncNone},
		Pattern{Profile: result.ProfileLog, RW: Write, Block: 4 << 10, QD: 1, Threads: 1, Sync: result.SyncFdatasync}))
	after := snap()
	for name := range files {
		if before[name] != after[name] {
			t.Fatalf("%s changed: %+v -> %+v", name, before[name], after[name])
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != len(files) {
		t.Fatalf("directory holds %d entries, want the %d it had", len(entries), len(files))
	}
}

// TestPlaceProblems: each problem with --path is one clear line (a
// UserError) and leaves nothing behind.
func TestPlaceProblems(t *testing.T) {
	regular := filepath.Join(t.TempDir(), "datafile")
	os.WriteFile(regular, []byte("keep me"), 0o600)
	cases := []struct {
		name string
		dir  func(t *testing.T) string
		size int64
		want string
	}{
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, 8 << 20, "does not exist"},
		{"a regular file", func(t *testing.T) string { return regular }, 8 << 20, "is not a directory"},
		{"a device", func(t *testing.T) string { return "/dev/null" }, 8 << 20, "is a device, not a directory"},
		{"read-only filesystem", func(t *testing.T) string {
			d := itest.Mount(t, "tmpfs", "size=16m")
			itest.RemountReadOnly(t, d)
			return d
		}, 1 << 20, "read-only filesystem"},
		{"would leave under 10% free", func(t *testing.T) string { return itest.Mount(t, "tmpfs", "size=16m") }, 15 << 20, "would leave 6.2% of the filesystem free"},
		{"larger than the filesystem", func(t *testing.T) string { return itest.Mount(t, "tmpfs", "size=16m") }, 32 << 20, "would leave 0.0% of the filesystem free"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir(t)
			cfg := quick(dir, Profiles[result.ProfileBackup]()...)
			cfg.Size = c.size
			tg, err := Open(cfg)
			if err == nil {
				tg.Close()
				t.Fatalf("Open succeeded, want %q", c.want)
			}
			if !errext.IsUser(err) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q (%T), want a one-line UserError containing %q", err, err, c.want)
			}
			if fi, _ := os.Stat(dir); fi != nil && fi.IsDir() && len(itest.DatFiles(t, dir)) != 0 {
				t.Fatal("a test file was left behind")
			}
		})
	}
	if b, _ := os.ReadFile(regular); string(b) != "keep me" {
		t.Fatal("the regular file given as --path changed")
	}
}

// TestNoSpace: the filesystem fills up after the free-space check (here:
// the test fills it between Open and Layout, as another writer would);
// the layout, checking free space as the file grows, stops with a clear
// line and the file is gone.
func TestNoSpace(t *testing.T) {
	for _, free := range []int64{0, 512 << 10, 3 << 20} {
		t.Run(metric.FormatBytes(free)+" left", func(t *testing.T) {
			dir := itest.Mount(t, "tmpfs", "size=32m")
			cfg := quick(dir, Profiles[result.ProfileBackup]()...)
			cfg.Size = 16 << 20
			tg, err := Open(cfg)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer tg.Close()
			itest.FillTo(t, dir, free)
			err = tg.Layout(context.Background())
			if !errext.IsUser(err) || !strings.Contains(err.Error(), "no space left for the test file: the filesystem's free space fell to") {
				t.Fatalf("layout on a full filesystem: %v (%T)", err, err)
			}
			if err := tg.Close(); err != nil {
				t.Fatal(err)
			}
			if left := itest.DatFiles(t, dir); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}

// TestShortWriteIsNoSpace: a write the kernel cuts short because the
// filesystem just filled up (it returns what it wrote; ENOSPC comes only
// with the next write) is the no-space line, not "short write".
func TestShortWriteIsNoSpace(t *testing.T) {
	dir := itest.Mount(t, "tmpfs", "size=32m")
	cfg := quick(dir, Profiles[result.ProfileBackup]()...)
	cfg.Size, cfg.Buffered = 16<<20, true
	tg, err := Open(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer tg.Close()
	itest.FillTo(t, dir, 512<<10)
	buf := make([]byte, 1<<20)
	n, err := tg.io.pwrite(buf, 0, false)
	if err != nil || n == 0 || n == len(buf) {
		t.Fatalf("wrote %d of %d (%v): the filesystem was not left part full", n, len(buf), err)
	}
	err = tg.placeErr("write the test file", shortIO(false))
	if !errext.IsUser(err) || !strings.Contains(err.Error(), "no space left on the device (a short write: the filesystem is full") {
		t.Fatalf("a short write on a full filesystem: %v (%T)", err, err)
	}
}

// TestDirectRefused: ramfs has no direct I/O (unlike tmpfs since Linux
// 6.6, which takes O_DIRECT): the run falls back to the page cache and
// says so. ramfs reports no size, so free memory stands in.
func TestDirectRefused(t *testing.T) {
	dir := itest.Mount(t, "ramfs", "")
	cfg := quick(dir, Pattern{Profile: result.ProfileData, RW: RandRead, Block: 8 << 10, QD: 4, Threads: 1, Sync: result.SyncNone},
		Pattern{Profile: result.ProfileLog, RW: Write, Block: 4 << 10, QD: 1, Threads: 1, Sync: result.SyncFdatasync})
	tg, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(tg.Notes(), "\n")
	tg.Close()
	if !strings.Contains(notes, "the ramfs filesystem refuses O_DIRECT: measured through the page cache (buffered) instead") {
		t.Fatalf("notes %q", notes)
	}
	res, _ := measure(t, cfg)
	if res.Direct || !strings.Contains(res.DirectUnavailable, "ramfs filesystem refuses O_DIRECT") || res.Filesystem != "ramfs" {
		t.Fatalf("direct %v (%q) on %q", res.Direct, res.DirectUnavailable, res.Filesystem)
	}
	for _, p := range res.Patterns {
		if p.IOs == 0 {
			t.Fatalf("%s measured nothing", p.Name)
		}
	}
	if left := itest.DatFiles(t, dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	// And tmpfs: direct I/O is taken (Linux 6.6 and later), or refused
	// with the notice saying so.
	tmp := itest.Mount(t, "tmpfs", "size=32m")
	tg, err = Open(quick(tmp, cfg.Patterns...))
	if err != nil {
		t.Fatal(err)
	}
	notes = strings.Join(tg.Notes(), "\n")
	tg.Close()
	t.Logf("tmpfs: direct %v, notes %q", tg.direct, notes)
	if !tg.direct && !strings.Contains(notes, "the tmpfs filesystem refuses O_DIRECT") {
		t.Fatalf("tmpfs: no O_DIRECT and no notice saying why (notes %q)", notes)
	}
}

// TestDevice: a block device is read, never written, and never opened
// for writing; write patterns are refused.
func TestDevice(t *testing.T) {
	image := filepath.Join(t.TempDir(), "disk.img")
	b := make([]byte, 16<<20)
	fill(b, 99)
	if err := os.WriteFile(image, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := func() [32]byte {
		f, err := os.Open(image)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		h := sha256.New()
		io.Copy(h, f)
		return [32]byte(h.Sum(nil))
	}
	before := sum()
	dev := itest.LoopDevice(t, image)
	reads := append(Profiles[result.ProfileData]()[:3], Profiles[result.ProfileBackup]()[0])
	cfg := quick("", reads...)
	cfg.Device, cfg.Size = dev, 0
	res, _ := measure(t, cfg)
	if !res.Device || res.FileBytes != 16<<20 || len(res.Patterns) != 4 {
		t.Fatalf("device %v, %d bytes, %d patterns", res.Device, res.FileBytes, len(res.Patterns))
	}
	for i, p := range res.Patterns {
		checkPattern(t, reads[i], p)
	}
	cfg.Patterns = Profiles[result.ProfileLog]()
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "a device is only ever read") {
		t.Fatalf("a write pattern on a device: %v", err)
	}
	if sum() != before {
		t.Fatal("the device's contents changed")
	}
}

// TestInterruptedRun: cancelling the context stops the pattern, keeps what
// it measured, marks it, and Close still removes the file.
func TestInterruptedRun(t *testing.T) {
	dir := t.TempDir()
	cfg := quick(dir, Profiles[result.ProfileData]()...)
	cfg.Duration = 10 * time.Second
	tg, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.Layout(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := tg.Run(ctx, func(result.Interval) {})
	if err != nil || time.Since(start) > 3*time.Second {
		t.Fatalf("run: %v after %v", err, time.Since(start))
	}
	if len(res.Patterns) != 1 || res.Patterns[0].Stopped != "interrupted" || res.Patterns[0].IOs == 0 {
		t.Fatalf("patterns %+v", res.Patterns)
	}
	if st, err := tg.f.Stat(); err != nil || st.Size() != tg.size+markerSize {
		t.Fatalf("the test file should be open until Close: %v, %v", st, err)
	}
	tg.Close()
	if left := itest.DatFiles(t, dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}
