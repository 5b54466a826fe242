//go:build !linux && !windows

package disk

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// fsInfo is what the system says about the filesystem under a directory.
type fsInfo struct {
	total, avail int64 // bytes; total 0: the filesystem reports no size
	name         string
	sector       int64
}

// The words for the result: the portable engine's dsync handle is opened
// O_SYNC, and its flush is File.Sync (fsync; F_FULLFSYNC on macOS).
var words = sysWords{direct: "O_DIRECT", dsync: "O_SYNC", dsyncName: "O_DSYNC", flush: "fsync", cache: "page cache"}

func memory() (free, total int64, err error) { return 0, 0, errNotHere }

var errNotHere = errors.New("not available on this platform")

// Direct I/O is O_DIRECT on Linux and FILE_FLAG_NO_BUFFERING on Windows:
// macOS's F_NOCACHE is not wired in, so runs elsewhere are buffered and
// say so.
const directAvailable = false

// logThroughCache: every write here goes through the cache already.
const logThroughCache = false

func enableDirect(f *os.File) error  { return errNotHere }
func disableDirect(f *os.File) error { return nil }
func directRefused(err error) bool   { return false }
func dropCache(f *os.File)           {}

// allocAligned returns n bytes starting on a DirectAlign boundary. The
// portable engine only hands them to read and write calls.
func allocAligned(n int) ([]byte, error) {
	b := make([]byte, n+DirectAlign)
	skip := (DirectAlign - int(uintptr(unsafe.Pointer(&b[0]))%DirectAlign)) % DirectAlign
	return b[skip : skip+n : skip+n], nil
}

func freeAligned(b []byte) {}

// fileIO is positioned I/O on the open file. A dsync write goes through a
// second handle opened with O_SYNC on the same file, checked to be the file this run created.
type fileIO struct {
	f, sync *os.File
	path    string
	once    sync.Once
	syncErr error
}

func newFileIO(f *os.File, path string, direct bool) (*fileIO, error) {
	return &fileIO{f: f, path: path}, nil
}

func (x *fileIO) close() {
	if x.sync != nil {
		x.sync.Close()
	}
}

func (x *fileIO) pread(b []byte, off int64) (int, error) { return x.f.ReadAt(b, off) }

func (x *fileIO) pwrite(b []byte, off int64, dsync bool) (int, error) {
	if !dsync {
		return x.f.WriteAt(b, off)
	}
	x.once.Do(func() {
		if x.path == "" {
			x.syncErr = errors.New("dsync writes need the test file")
			return
		}
		s, err := os.OpenFile(x.path, os.O_WRONLY|os.O_SYNC, 0)
		if err != nil {
			x.syncErr = err
			return
		}
		a, err1 := s.Stat()
		b, err2 := x.f.Stat()
		if err1 != nil || err2 != nil || !os.SameFile(a, b) {
			s.Close()
			x.syncErr = fmt.Errorf("%s is no longer the file this run created", x.path)
			return
		}
		x.sync = s
	})
	if x.syncErr != nil {
		return 0, x.syncErr
	}
	return x.sync.WriteAt(b, off)
}

func (x *fileIO) datasync() error { return x.f.Sync() }

func openDevice(path string) (*os.File, error) {
	return nil, fmt.Errorf("--device is not available on this platform")
}
