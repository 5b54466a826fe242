//go:build windows

package disk

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fsInfo is what the system says about the volume under a directory.
type fsInfo struct {
	total, avail int64 // bytes; total 0: the volume reports no size
	name         string
	sector       int64 // bytes per logical sector; 0 when unknown
}

func memory() (free, total int64, err error) { return 0, 0, errNotHere }

var errNotHere = errors.New("not available on this platform")

// Windows' words: SQL Server opens its data files FILE_FLAG_NO_BUFFERING
// and its log FILE_FLAG_NO_BUFFERING|FILE_FLAG_WRITE_THROUGH.
var words = sysWords{direct: "FILE_FLAG_NO_BUFFERING", dsync: "FILE_FLAG_WRITE_THROUGH", dsyncName: "write-through",
	flush: "FlushFileBuffers", cache: "system file cache"}

// Direct I/O is FILE_FLAG_NO_BUFFERING, given when a handle is opened:
// the measuring handles are opened with it (newFileIO), so there is
// nothing to turn on here. NTFS, ReFS and SMB shares all take it; what
// they refuse is a misaligned transfer, and every transfer here is whole
// sectors from VirtualAlloc's pages (the sector is checked in
// chooseDirect).
const directAvailable = true

// logThroughCache: SQL Server opens its log FILE_FLAG_NO_BUFFERING |
// FILE_FLAG_WRITE_THROUGH, so the log patterns keep the measuring
// handles' flags.
const logThroughCache = false

func enableDirect(f *os.File) error { return nil }
func disableDirect(f *os.File) error {
	return errors.New("FILE_FLAG_NO_BUFFERING cannot be turned off on an open handle")
}
func directRefused(err error) bool { return false }

// dropCache: Windows has no call that evicts one file from the system
// file cache, so a buffered run's reads may be served from it (the result
// says the run was buffered).
func dropCache(f *os.File) {}

var (
	kernel32              = windows.NewLazySystemDLL("kernel32.dll")
	procGetDiskFreeSpaceW = kernel32.NewProc("GetDiskFreeSpaceW")
)

func statFS(dir string) (fsInfo, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return fsInfo{}, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return fsInfo{}, err
	}
	fi := fsInfo{total: int64(total), avail: int64(avail)}
	fi.sector, fi.name = volumeOf(dir, p)
	return fi, nil
}

// volumes remembers what volumeOf found for each directory: statFS runs
// for every chunk the layout writes, and a volume's sector and
// filesystem do not change under a run.
var volumes struct {
	sync.Mutex
	of map[string]volume
}

type volume struct {
	sector int64
	name   string
}

// volumeOf is the logical sector size and the filesystem's name (NTFS,
// ReFS, ...) of the volume holding path; 0 and "" when it will not say.
func volumeOf(dir string, path *uint16) (sector int64, name string) {
	volumes.Lock()
	defer volumes.Unlock()
	if v, ok := volumes.of[dir]; ok {
		return v.sector, v.name
	}
	var root [windows.MAX_PATH + 1]uint16
	if windows.GetVolumePathName(path, &root[0], uint32(len(root))) != nil {
		return 0, ""
	}
	var spc, bps, freeClusters, clusters uint32
	r, _, _ := procGetDiskFreeSpaceW.Call(uintptr(unsafe.Pointer(&root[0])), uintptr(unsafe.Pointer(&spc)),
		uintptr(unsafe.Pointer(&bps)), uintptr(unsafe.Pointer(&freeClusters)), uintptr(unsafe.Pointer(&clusters)))
	if r != 0 {
		sector = int64(bps)
	}
	var fsName [windows.MAX_PATH + 1]uint16
	if windows.GetVolumeInformation(&root[0], nil, 0, nil, nil, nil, &fsName[0], uint32(len(fsName))) == nil {
		name = windows.UTF16ToString(fsName[:])
	}
	if volumes.of == nil {
		volumes.of = map[string]volume{}
	}
	volumes.of[dir] = volume{sector, name}
	return sector, name
}

// allocAligned returns page-aligned memory outside the Go heap
// (VirtualAlloc): FILE_FLAG_NO_BUFFERING needs sector-aligned buffers,
// and the system writes them while overlapped I/O is in flight.
func allocAligned(n int) ([]byte, error) {
	addr, err := windows.VirtualAlloc(0, uintptr(n), windows.MEM_COMMIT|windows.MEM_RESERVE, windows.PAGE_READWRITE)
	if err != nil {
		return nil, fmt.Errorf("disk: allocating %d bytes of I/O buffers: %w", n, err)
	}
	// Through a pointer to the address: the memory is not Go's, and vet
	// rightly distrusts turning a uintptr into a pointer directly.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n), nil
}

func freeAligned(b []byte) {
	if len(b) > 0 {
		windows.VirtualFree(uintptr(unsafe.Pointer(&b[0])), 0, windows.MEM_RELEASE)
	}
}

// fileIO is positioned I/O on the test file through handles of its own,
// opened by name and checked to be the file this run created, with
// FILE_FLAG_NO_BUFFERING when direct: one for reads and writes, one with
// FILE_FLAG_WRITE_THROUGH added (opened at the first dsync write, as SQL
// Server opens its log), and a synchronous one for FlushFileBuffers. The
// first two are overlapped, each call waiting for its own I/O: Windows
// serializes the I/O of a handle opened without FILE_FLAG_OVERLAPPED, so
// the portable engine's threads would otherwise take turns, one I/O in
// flight whatever the queue depth. The file as created (f) keeps its
// identity and its marker; Close removes it once these are closed.
type fileIO struct {
	f      *os.File
	path   string
	direct bool
	h, rw  windows.Handle // synchronous (flushes); overlapped (reads, writes)
	calls  chan *call     // idle calls, each with its event

	once  sync.Once
	wt    windows.Handle
	wtErr error
}

// call is one positioned I/O waited for: its Overlapped (on the heap,
// where it stays put while the system holds it) and the event it signals.
type call struct {
	ov windows.Overlapped
	ev windows.Handle
	n  uint32
}

func newFileIO(f *os.File, path string, direct bool) (_ *fileIO, err error) {
	x := &fileIO{f: f, path: path, direct: direct, calls: make(chan *call, 256)}
	defer func() {
		if err != nil {
			x.close()
		}
	}()
	if x.h, err = x.open(0); err != nil {
		return nil, err
	}
	if x.rw, err = x.open(windows.FILE_FLAG_OVERLAPPED); err != nil {
		return nil, err
	}
	return x, nil
}

// open opens the test file again with the flags this run's I/O needs
// (FILE_FLAG_NO_BUFFERING when direct) and more (FILE_FLAG_OVERLAPPED,
// FILE_FLAG_WRITE_THROUGH). The name is this run's only while the file
// is the one it created: anything else there is refused.
func (x *fileIO) open(flags uint32) (windows.Handle, error) {
	if x.path == "" {
		return 0, errors.New("disk: the test file has no name to open it by")
	}
	if x.direct {
		flags |= windows.FILE_FLAG_NO_BUFFERING
	}
	p, err := windows.UTF16PtrFromString(x.path)
	if err != nil {
		return 0, err
	}
	// FILE_FLAG_OPEN_REPARSE_POINT: a link planted under the name is
	// opened itself, not followed, and then fails the check below.
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE,
		nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT|flags, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: x.path, Err: err}
	}
	if !sameFile(h, windows.Handle(x.f.Fd())) {
		windows.CloseHandle(h)
		return 0, fmt.Errorf("%s is no longer the file this run created", x.path)
	}
	return h, nil
}

// sameFile: the two handles are of one file (volume and file index).
func sameFile(a, b windows.Handle) bool {
	var ia, ib windows.ByHandleFileInformation
	if windows.GetFileInformationByHandle(a, &ia) != nil || windows.GetFileInformationByHandle(b, &ib) != nil {
		return false
	}
	return ia.VolumeSerialNumber == ib.VolumeSerialNumber && ia.FileIndexHigh == ib.FileIndexHigh && ia.FileIndexLow == ib.FileIndexLow
}

// close closes the handles and the idle calls' events; it runs once no
// I/O is in flight (every call waits for its own).
func (x *fileIO) close() {
	for _, h := range []*windows.Handle{&x.wt, &x.rw, &x.h} {
		if *h != 0 {
			windows.CloseHandle(*h)
			*h = 0
		}
	}
	for {
		select {
		case c := <-x.calls:
			windows.CloseHandle(c.ev)
		default:
			return
		}
	}
}

// do reads or writes b at off through the overlapped handle h and waits
// for it, as pread and pwrite.
func (x *fileIO) do(h windows.Handle, read bool, b []byte, off int64) (int, error) {
	var c *call
	select {
	case c = <-x.calls:
	default:
		ev, err := windows.CreateEvent(nil, 1, 0, nil)
		if err != nil {
			return 0, fmt.Errorf("CreateEvent: %w", err)
		}
		c = &call{ev: ev}
	}
	defer func() {
		select {
		case x.calls <- c:
		default:
			windows.CloseHandle(c.ev)
		}
	}()
	c.ov = windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32), HEvent: c.ev}
	var err error
	if read {
		err = windows.ReadFile(h, b, &c.n, &c.ov)
	} else {
		err = windows.WriteFile(h, b, &c.n, &c.ov)
	}
	var n uint32
	if err == nil || err == windows.ERROR_IO_PENDING {
		err = windows.GetOverlappedResult(h, &c.ov, &n, true)
	}
	if err == windows.ERROR_HANDLE_EOF {
		err = io.EOF
	}
	return int(n), err
}

func (x *fileIO) pread(b []byte, off int64) (int, error) { return x.do(x.rw, true, b, off) }

func (x *fileIO) pwrite(b []byte, off int64, dsync bool) (int, error) {
	h := x.rw
	if dsync {
		if h = x.writeThrough(); h == 0 {
			return 0, x.wtErr
		}
	}
	return x.do(h, false, b, off)
}

// writeThrough is the handle whose writes return once durable, opened
// at the first dsync write; 0 when it could not be (wtErr says why).
func (x *fileIO) writeThrough() windows.Handle {
	x.once.Do(func() {
		x.wt, x.wtErr = x.open(windows.FILE_FLAG_OVERLAPPED | windows.FILE_FLAG_WRITE_THROUGH)
	})
	return x.wt
}

// datasync is FlushFileBuffers, through the synchronous handle: the
// file's data and metadata, then the device's write cache (Windows has
// no data-only flush of its own).
func (x *fileIO) datasync() error { return windows.FlushFileBuffers(x.h) }

func openDevice(path string) (*os.File, error) {
	return nil, fmt.Errorf("--device is not available on this platform")
}
