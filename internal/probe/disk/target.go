package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
)

// Config is what to measure and where.
type Config struct {
	Dir      string // the directory whose filesystem is measured
	Device   string // instead of Dir: a block device, read patterns only
	Size     int64  // bytes of the test file (of the device: how much of it to read; 0 = all)
	Patterns []Pattern
	Profiles []string // for the record: what was asked for
	Duration time.Duration
	Interval time.Duration
	Buffered bool   // go through the page cache instead of O_DIRECT (Windows: FILE_FLAG_NO_BUFFERING)
	Engine   string // EngineAuto, EngineURing, EngineIOCP or EnginePortable
	Seed     uint64
	// Histograms keeps each pattern's latency histogram in its summary
	// (result.DiskPattern.Histogram), within metric.SparseBudget over
	// the patterns: a fleet merges its hosts' into the true percentiles.
	Histograms bool
}

// Engines.
const (
	EngineAuto     = "auto"
	EngineURing    = "io_uring" // Linux
	EngineIOCP     = "iocp"     // Windows: overlapped I/O on an I/O completion port
	EnginePortable = "portable"
)

// FreeShare is the share of a filesystem that must stay free once the test
// file is written: the probe measures a database's storage, it must not
// fill it.
const FreeShare = 0.10

// The test file's name is FilePrefix, 16 random hex digits, FileSuffix.
const (
	FilePrefix = "narrows-"
	FileSuffix = ".dat"
)

// layoutChunk is the size of the writes that lay the file out.
const layoutChunk = 1 << 20

// userErrorf is a problem a person fixes (no space, no permission, a
// wrong path): one line saying what and what to do (errext.User).
func userErrorf(err error, format string, a ...any) error {
	return errext.Userf(err, format, a...)
}

// Target is the open test file (or device) the patterns run against.
type Target struct {
	cfg     Config
	f       *os.File
	io      *fileIO
	dir     string      // the directory the file is in, symbolic links resolved
	dirNote string      // says so when that is not --path as given
	path    string      // the file's name while it has one (not on Linux); "" for a device
	created os.FileInfo // its identity: Close removes only this file
	size    int64       // the bytes the patterns span; the marker follows them
	fs      fsInfo
	stale   []Stale // test files killed runs left in dir

	direct            bool
	directUnavailable string
	engine            string
	engineNote        string
	layout            time.Duration
}

// Open checks the place, creates the test file (or opens the device
// read-only) and chooses the engine and direct I/O. It writes nothing yet
// (see Layout). On error nothing is left behind.
func Open(cfg Config) (_ *Target, err error) {
	t := &Target{cfg: cfg}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if cfg.Device != "" {
		err = t.openDevice()
	} else {
		err = t.openFile()
	}
	if err != nil {
		return nil, err
	}
	if err = t.chooseDirect(); err != nil {
		return nil, err
	}
	t.engine, t.engineNote, err = chooseEngine(cfg.Engine)
	if err != nil {
		return nil, err
	}
	if t.io, err = newFileIO(t.f, t.path, t.direct); err != nil {
		return nil, t.placeErr("open the test file for measuring", err)
	}
	return t, nil
}

func (t *Target) openFile() error {
	dir := t.cfg.Dir
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return userErrorf(err, "--path %s does not exist: give the directory that holds the database's files", dir)
	case err != nil:
		if w, ok := probe.PathWords(dir, err); ok {
			return userErrorf(err, "--path %s%s", dir, w)
		}
		return userErrorf(err, "--path %s: %v", dir, unwrapPath(err))
	case fi.Mode()&fs.ModeDevice != 0:
		return userErrorf(nil, "--path %s is a device, not a directory: to read a block device use --device %s with a read pattern", dir, dir)
	case !fi.IsDir():
		return userErrorf(nil, "--path %s is not a directory: give the directory that holds the database's files", dir)
	}
	// Say where the file really goes: --path may lead elsewhere through a
	// symbolic link (of its own or of a directory above it).
	t.dir = dir
	if abs, err := filepath.Abs(dir); err == nil {
		t.dir = abs
	}
	if real, err := filepath.EvalSymlinks(t.dir); err == nil && real != t.dir {
		t.dirNote = fmt.Sprintf("--path %s leads to %s through a symbolic link: the test file is written there", dir, real)
		t.dir = real
	}
	if t.fs, err = statFS(t.dir); err != nil {
		return userErrorf(err, "--path %s: cannot read the filesystem's free space: %v", dir, err)
	}
	t.stale, _ = FindStale(t.dir)
	t.size = t.cfg.Size / layoutChunk * layoutChunk
	if t.size == 0 {
		t.size = t.cfg.Size / DirectAlign * DirectAlign
	}
	if err := t.checkSpace(t.fs, t.size+markerSize, false); err != nil {
		return err
	}
	if t.f, t.path, err = createFile(t.dir, t.size); err != nil {
		return placeError(dir, "create the test file", err)
	}
	if t.created, err = t.f.Stat(); err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	return nil
}

// checkSpace refuses to let the test file leave less than FreeShare of
// the filesystem free: before it is created (need: all of it), and while
// it is written (need: what is still to come; growing says so), as another
// writer may be filling the filesystem meanwhile.
func (t *Target) checkSpace(fsi fsInfo, need int64, growing bool) error {
	size, dir := t.cfg.Size, t.cfg.Dir
	total, avail, what := fsi.total, fsi.avail, "filesystem"
	if total == 0 {
		// ramfs and the like report no size: they live in RAM.
		free, mem, err := memory()
		if err != nil {
			if growing {
				return nil // the writes themselves will say ENOSPC
			}
			return userErrorf(err, "--path %s: the filesystem reports no size, so its free space cannot be checked", dir)
		}
		total, avail, what = mem, free, "memory (this filesystem reports no size of its own)"
	}
	left := avail - need
	if left >= int64(math.Ceil(FreeShare*float64(total))) {
		return nil
	}
	if growing {
		return userErrorf(nil, "--path %s: no space left for the test file: the %s's free space fell to %s of %s while it was written (another writer is filling it); narrows stopped to keep at least %.0f%% free: free some space or use a smaller --size",
			dir, what, metric.FormatBytes(avail), metric.FormatBytes(total), 100*FreeShare)
	}
	share := 100 * float64(max(left, 0)) / float64(total)
	hint := ""
	if n := len(t.stale); n > 0 {
		var held int64
		for _, s := range t.stale {
			held += s.Bytes
		}
		hint = fmt.Sprintf(" (%d test file(s) that killed narrows runs left there hold %s: `narrows disk --path %s --clean-stale` removes them)", n, metric.FormatBytes(held), dir)
	}
	return userErrorf(nil, "--path %s: a %s test file would leave %.1f%% of the %s free (%s free of %s now); narrows keeps at least %.0f%% free: use a smaller --size or free some space%s",
		dir, metric.FormatBytes(size), share, what, metric.FormatBytes(avail), metric.FormatBytes(total), 100*FreeShare, hint)
}

func (t *Target) openDevice() error {
	dev := t.cfg.Device
	for _, p := range t.cfg.Patterns {
		if p.Writes() {
			return userErrorf(nil, "--device %s: the %s pattern writes; a device is only ever read (use --path DIR to measure writes)", dev, p.Name())
		}
	}
	fi, err := os.Stat(dev)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return userErrorf(err, "--device %s does not exist", dev)
	case err != nil:
		return userErrorf(err, "--device %s: %v", dev, unwrapPath(err))
	case fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0:
		return userErrorf(nil, "--device %s is not a block device: to measure a directory's filesystem use --path", dev)
	}
	if t.f, err = openDevice(dev); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return userErrorf(err, "--device %s: permission denied: reading a device needs root or the disk group", dev)
		}
		return userErrorf(err, "--device %s: %v", dev, unwrapPath(err))
	}
	end, err := t.f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("disk: size of %s: %w", dev, err)
	}
	t.size = end
	if t.cfg.Size > 0 && t.cfg.Size < end {
		t.size = t.cfg.Size
	}
	t.size = t.size / layoutChunk * layoutChunk
	if t.size == 0 {
		return userErrorf(nil, "--device %s is smaller than 1 MiB", dev)
	}
	return nil
}

// chooseDirect turns on O_DIRECT (Windows: FILE_FLAG_NO_BUFFERING)
// unless --buffered; a filesystem that refuses it gets the page cache, and
// the result says so. A volume whose sectors are larger than DirectAlign
// (Windows says its size) needs blocks of whole sectors.
func (t *Target) chooseDirect() error {
	if t.cfg.Buffered {
		return nil
	}
	if s := t.fs.sector; s > DirectAlign {
		for _, p := range t.cfg.Patterns {
			if p.Block%s != 0 {
				return userErrorf(nil, "--block %s: %s on %s needs whole sectors of %s; use a multiple of it, or --buffered",
					metric.FormatBytes(p.Block), words.direct, t.cfg.Dir, metric.FormatBytes(s))
			}
		}
	}
	if !directAvailable {
		t.directUnavailable = "direct I/O (O_DIRECT) is not available on this platform: measured through the operating system's cache"
		return nil
	}
	err := enableDirect(t.f)
	switch {
	case err == nil:
		t.direct = true
	case directRefused(err):
		t.directUnavailable = t.fsName() + " refuses O_DIRECT: measured through the page cache (buffered) instead"
	default:
		return fmt.Errorf("disk: O_DIRECT: %w", err)
	}
	return nil
}

func (t *Target) fsName() string {
	if t.fs.name != "" {
		return "the " + t.fs.name + " filesystem"
	}
	if t.cfg.Device != "" {
		return "the device"
	}
	return "the filesystem"
}

// Layout writes the whole test file (not a sparse one: reads of holes
// never reach the device) with incompressible data, each 4 KiB block
// different, and makes it durable. A device is left alone.
func (t *Target) Layout(ctx context.Context) error {
	if t.cfg.Device != "" {
		return nil
	}
	start := time.Now()
	chunk := min(t.size, layoutChunk)
	buf, err := allocAligned(int(chunk))
	if err != nil {
		return err
	}
	defer freeAligned(buf)
	fill(buf, t.cfg.Seed)
	for off := int64(0); off < t.size; off += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		if fsi, err := statFS(t.dir); err == nil {
			if err := t.checkSpace(fsi, t.size-off, true); err != nil {
				return err
			}
		}
		stamp(buf, off)
		n, err := t.io.pwrite(buf, off, false)
		if err != nil && off == 0 && t.direct && directRefused(err) {
			// Some filesystems take O_DIRECT at open and refuse the I/O.
			if derr := disableDirect(t.f); derr != nil {
				return fmt.Errorf("disk: turning O_DIRECT off: %w", derr)
			}
			t.direct = false
			t.directUnavailable = t.fsName() + " refuses O_DIRECT writes: measured through the page cache (buffered) instead"
			n, err = t.io.pwrite(buf, off, false)
		}
		if err == nil && n != len(buf) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return t.placeErr(fmt.Sprintf("write the %s test file", metric.FormatBytes(t.size)), err)
		}
	}
	if err := t.io.datasync(); err != nil {
		return t.placeErr("flush the test file", err)
	}
	// Buffered, what was just written is in the page cache: each pattern
	// drops it before it starts (runPattern).
	t.layout = time.Since(start)
	return nil
}

// placeError turns what the OS said about --path into a line a person
// can act on, or wraps it when a person cannot.
func placeError(dir, doing string, err error) error {
	switch {
	case isNoSpace(err):
		return userErrorf(err, "--path %s: no space left on the device (ENOSPC) trying to %s: free some space or use a smaller --size", dir, doing)
	case isReadOnly(err):
		return userErrorf(err, "--path %s is on a read-only filesystem: narrows needs to create its test file there (to read a block device, use --device with a read pattern)", dir)
	case errors.Is(err, fs.ErrPermission):
		w, _ := probe.PathWords(dir, err)
		return userErrorf(err, "--path %s: permission denied trying to %s%s", dir, doing, strings.TrimPrefix(w, ": permission denied"))
	}
	return fmt.Errorf("disk: %s in %s: %w", doing, dir, err)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Close closes the file and removes it, if the name still holds the file
// this run created. It is safe to call more than once.
func (t *Target) Close() error {
	if t.io != nil {
		t.io.close()
		t.io = nil
	}
	if t.f == nil {
		return nil
	}
	ours := false
	if t.path != "" && t.created != nil {
		if fi, err := os.Lstat(t.path); err == nil && os.SameFile(fi, t.created) {
			ours = true
		}
	}
	err := t.f.Close()
	t.f = nil
	if ours {
		if rerr := os.Remove(t.path); rerr != nil {
			return fmt.Errorf("disk: removing the test file %s: %w", t.path, rerr)
		}
	}
	return err
}

// Path is the test file's name; "" when it has none (Linux: it cannot
// outlive the process) and with a device.
func (t *Target) Path() string { return t.path }

// Dir is the directory the test file is in, symbolic links resolved.
func (t *Target) Dir() string { return t.dir }

// Stale is what killed runs left in the directory (FindStale).
func (t *Target) Stale() []Stale { return t.stale }

// Size is how many bytes the patterns span.
func (t *Target) Size() int64 { return t.size }

// Notes are one-line notices for the person running it: what fell back
// to what, and why.
func (t *Target) Notes() []string {
	var n []string
	if t.dirNote != "" {
		n = append(n, t.dirNote)
	}
	if t.directUnavailable != "" {
		n = append(n, t.directUnavailable)
	}
	if t.engineNote != "" {
		n = append(n, t.engineNote)
	}
	return n
}

// Summary is the result without patterns: where, with what, how.
func (t *Target) Summary() *result.Disk {
	d := &result.Disk{
		Config: result.DiskConfig{Profiles: t.cfg.Profiles, Duration: result.Seconds(t.cfg.Duration), Interval: result.Seconds(t.cfg.Interval),
			FileBytes: t.cfg.Size, Buffered: t.cfg.Buffered, Engine: t.cfg.Engine, Seed: t.cfg.Seed},
		Path: t.cfg.Dir, Filesystem: t.fs.name, FileBytes: t.size, Engine: t.engine, EngineNote: t.engineNote,
		Direct: t.direct, DirectUnavailable: t.directUnavailable, Layout: result.Seconds(t.layout), Patterns: []result.DiskPattern{},
		IO: &result.DiskIO{Direct: words.direct, Dsync: words.dsync, Flush: words.flush, Cache: words.cache},
	}
	if t.cfg.Device != "" {
		d.Path, d.Device = t.cfg.Device, true
	}
	if t.dir != "" {
		d.Path = t.dir
	} else if abs, err := filepath.Abs(d.Path); err == nil {
		d.Path = abs
	}
	return d
}

// fill writes seeded pseudo-random bytes: nothing compresses or
// deduplicates them away.
func fill(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for k := range 8 {
			b[i+k] = byte(x >> (8 * k))
		}
	}
}

// stamp makes every 4 KiB block of a layout chunk unique in the file, so
// a deduplicating store cannot keep one copy of a repeated chunk.
func stamp(b []byte, off int64) {
	for i := 0; i+16 <= len(b); i += DirectAlign {
		v := uint64(off) + uint64(i)
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
}
