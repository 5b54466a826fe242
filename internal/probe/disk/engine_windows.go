//go:build windows

package disk

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/narrows/narrows/internal/result"
)

// chooseEngine: Windows' own is iocp, overlapped I/O on an I/O completion
// port, as SQL Server issues its I/O and DiskSpd measures it (-Su -o N; -Sh with write-through).
func chooseEngine(want string) (engine, note string, err error) {
	switch want {
	case EnginePortable:
		return EnginePortable, "", nil
	case EngineURing:
		return "", "", userErrorf(nil, "--engine io_uring: io_uring is Linux's; on Windows use iocp (overlapped I/O on an I/O completion port) or portable")
	}
	return EngineIOCP, "", nil
}

func (j *job) uringWorker(m *meter, offs *offsets, n int) error {
	return errors.New("disk: io_uring is only available on Linux")
}

// ioSlot is one outstanding I/O. The Overlapped comes first: the port
// hands back its address, and the slot is the memory around it.
type ioSlot struct {
	ov    windows.Overlapped
	buf   []byte
	off   int64
	read  bool
	start time.Time
	n     uint32 // set only when the call completes at once; unused
}

// issue starts the slot's I/O at off. The port receives its completion
// whether it finished at once or is pending (the handle does not skip
// the port on success).
func (s *ioSlot) issue(h windows.Handle, off int64, read bool) error {
	s.off, s.read = off, read
	s.ov = windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
	s.start = clockNow()
	var err error
	if read {
		err = windows.ReadFile(h, s.buf, &s.n, &s.ov)
	} else {
		err = windows.WriteFile(h, s.buf, &s.n, &s.ov)
	}
	if err == windows.ERROR_IO_PENDING {
		return nil
	}
	return err
}

// abandoned keeps the slots of I/O a failed port never returned, for the
// life of the process: the system may still write their Overlapped.
var abandoned struct {
	sync.Mutex
	slots []any // []ioSlot or *ioSlot
}

// hangAfter is how long past the end of a pattern (or after it was
// stopped) outstanding I/O is waited for before it is cancelled.
const hangAfter = 10 * time.Second

// completions is a worker's handle and the port its I/O completes on.
type completions struct {
	h, port   windows.Handle
	inFlight  int
	cancelled bool
}

// next waits for an I/O to complete and returns its slot, the bytes it
// moved and its error. It waits a second at a time so that I/O a device
// holds long after the run should have ended is cancelled (CancelIoEx),
// its completion then coming back aborted. A nil slot: the port itself
// failed, and what is in flight is still the system's.
func (c *completions) next(j *job) (*ioSlot, uint32, error) {
	for {
		var k uint32
		var key uintptr
		var ov *windows.Overlapped
		err := windows.GetQueuedCompletionStatus(c.port, &k, &key, &ov, 1000)
		if ov != nil {
			c.inFlight--
			return (*ioSlot)(unsafe.Pointer(ov)), k, err
		}
		if err != windows.WAIT_TIMEOUT {
			return nil, 0, fmt.Errorf("disk: GetQueuedCompletionStatus: %w", err)
		}
		if !c.cancelled && (j.stop.Load() || time.Since(j.deadline) > hangAfter) {
			windows.CancelIoEx(c.h, nil)
			c.cancelled = true
		}
	}
}

// iocpWorker keeps the pattern's queue depth outstanding on a handle and
// a completion port of its own, as DiskSpd does (-o N, with -Su, or -Sh
// for dsync): every I/O is
// reissued as soon as its completion is dequeued
// (GetQueuedCompletionStatus, one at a time), and timed from just before
// the ReadFile or WriteFile that issued it to its dequeue. The handle is
// opened FILE_FLAG_OVERLAPPED (with FILE_FLAG_NO_BUFFERING when direct,
// and FILE_FLAG_WRITE_THROUGH for dsync) and managed here, never by
// os.File: Go's runtime has a completion port of its own for its poller.
func (j *job) iocpWorker(m *meter, offs *offsets, n int) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	qd, block := j.p.QD, j.p.Block
	mem, err := allocAligned(qd * int(block))
	if err != nil {
		return err
	}
	c := &completions{}
	var slots []ioSlot
	// Deferred calls run in reverse: the port and the handle are closed
	// before the buffers go, and the buffers go only when nothing is in
	// flight (if the port failed with I/O outstanding, they and the slots
	// are left to the process: the system may still write them).
	defer func() {
		if c.inFlight == 0 {
			freeAligned(mem)
			return
		}
		abandoned.Lock()
		abandoned.slots = append(abandoned.slots, slots)
		abandoned.Unlock()
	}()
	fill(mem, j.t.cfg.Seed+uint64(n)+1)
	flags := uint32(windows.FILE_FLAG_OVERLAPPED)
	if j.p.Sync == result.SyncDsync {
		flags |= windows.FILE_FLAG_WRITE_THROUGH
	}
	if c.h, err = j.t.io.open(flags); err != nil {
		return j.t.placeErr("open the test file for overlapped I/O", err)
	}
	defer windows.CloseHandle(c.h)
	if c.port, err = windows.CreateIoCompletionPort(c.h, 0, 0, 1); err != nil {
		return fmt.Errorf("disk: CreateIoCompletionPort: %w", err)
	}
	defer windows.CloseHandle(c.port)
	if j.p.Sync == result.SyncFdatasync {
		return j.iocpCommits(c, m, offs, mem[:block])
	}
	slots = make([]ioSlot, qd)
	stopping := false
	for i := range slots {
		s := &slots[i]
		s.buf = mem[int64(i)*block : int64(i+1)*block]
		off, read := offs.next()
		if ierr := s.issue(c.h, off, read); ierr != nil {
			err, stopping = j.ioError(read, off, ierr), true
			break
		}
		c.inFlight++
	}
	for c.inFlight > 0 {
		s, k, cerr := c.next(j)
		if s == nil {
			return cerr
		}
		done := clockNow()
		switch {
		case cerr != nil && c.cancelled && errors.Is(cerr, windows.ERROR_OPERATION_ABORTED):
			stopping = true
			continue
		case cerr == nil && k != uint32(block):
			cerr = shortIO(s.read)
			fallthrough
		case cerr != nil:
			if err == nil {
				err = j.ioError(s.read, s.off, cerr)
			}
			stopping = true
			continue
		}
		m.mu.Lock()
		m.cur.io(s.read, block, done.Sub(s.start))
		m.mu.Unlock()
		if !stopping && (j.stop.Load() || !done.Before(j.deadline)) {
			stopping = true
		}
		if stopping {
			continue
		}
		off, read := offs.next()
		if ierr := s.issue(c.h, off, read); ierr != nil {
			err, stopping = j.ioError(read, off, ierr), true
			continue
		}
		c.inFlight++
	}
	runtime.KeepAlive(slots)
	return err
}

// iocpCommits is the log writer: a write, then FlushFileBuffers, one at
// a time. The write is timed from its WriteFile to its completion's
// dequeue, the flush around its call, and the commit whole: what a
// committing session waits. The flush goes through the run's
// synchronous handle (the same file; a flush is the file's, whichever
// handle asks), so no completion of its own can reach the port.
func (j *job) iocpCommits(c *completions, m *meter, offs *offsets, buf []byte) error {
	block := j.p.Block
	s := &ioSlot{buf: buf}
	for !j.stop.Load() {
		off, _ := offs.next()
		t0 := clockNow()
		if err := s.issue(c.h, off, false); err != nil {
			return j.ioError(false, off, err)
		}
		c.inFlight++
		got, k, err := c.next(j)
		if got == nil {
			abandoned.Lock()
			abandoned.slots = append(abandoned.slots, s)
			abandoned.Unlock()
			return err
		}
		t1 := clockNow()
		if err == nil && k != uint32(block) {
			err = shortIO(false)
		}
		if err != nil {
			if c.cancelled && errors.Is(err, windows.ERROR_OPERATION_ABORTED) {
				return nil
			}
			return j.ioError(false, off, err)
		}
		if err := j.t.io.datasync(); err != nil {
			return j.t.placeErr("flush (FlushFileBuffers) the test file", err)
		}
		t2 := clockNow()
		m.mu.Lock()
		m.cur.commit(block, t2.Sub(t0), t1.Sub(t0), t2.Sub(t1))
		m.mu.Unlock()
		if !t2.Before(j.deadline) {
			break
		}
	}
	runtime.KeepAlive(s)
	return nil
}
