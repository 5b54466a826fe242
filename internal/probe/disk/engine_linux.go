//go:build linux

package disk

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/uring"
)

// chooseEngine picks io_uring when this kernel gives it, else the portable
// engine with a note saying why.
func chooseEngine(want string) (engine, note string, err error) {
	switch want {
	case EnginePortable:
		return EnginePortable, "", nil
	case EngineIOCP:
		return "", "", userErrorf(nil, "--engine iocp: I/O completion ports are Windows'; on Linux use io_uring or portable")
	}
	reason := uringUnusable()
	switch {
	case reason == "":
		return EngineURing, "", nil
	case want == EngineURing:
		return "", "", userErrorf(nil, "--engine io_uring: %s", reason)
	}
	return EnginePortable, reason + ": using the portable engine (threads doing pread/pwrite)", nil
}

// uringUnusable says why io_uring cannot serve here, or "".
func uringUnusable() string {
	r, err := uring.New(4, uring.Options{})
	if err != nil {
		return uringRefusal(err)
	}
	defer r.Close()
	if ok, err := r.Supports(uring.OpRead, uring.OpWrite, uring.OpFsync); err != nil || !ok {
		return "this kernel's io_uring lacks IORING_OP_READ/WRITE (Linux 5.6 or later)"
	}
	return ""
}

func uringRefusal(err error) string {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return "this kernel has no io_uring (ENOSYS)"
	case errors.Is(err, unix.EPERM):
		b, _ := os.ReadFile("/proc/sys/kernel/io_uring_disabled")
		switch strings.TrimSpace(string(b)) {
		case "2":
			return "io_uring is disabled on this machine (sysctl kernel.io_uring_disabled=2)"
		case "1":
			return "io_uring is limited to the io_uring_group on this machine (sysctl kernel.io_uring_disabled=1)"
		}
		return "io_uring was refused (EPERM: a seccomp filter or container policy)"
	}
	return "io_uring could not be set up: " + err.Error()
}

// iocpWorker: chooseEngine never picks iocp here.
func (j *job) iocpWorker(m *meter, offs *offsets, n int) error {
	return errors.New("disk: the iocp engine is only available on Windows")
}

// errnoOf is the error of a completion that did not move the whole
// block: a negative result is an errno, a smaller count a short I/O.
func errnoOf(res int32, read bool) error {
	if res < 0 {
		return unix.Errno(-res)
	}
	return shortIO(read)
}

// slot is one outstanding I/O of a ring.
type slot struct {
	buf   []byte
	off   int64
	read  bool
	start time.Time
}

// uringWorker keeps the pattern's queue depth outstanding on a ring of
// its own, on a thread of its own (the ring is single-issuer). It runs as
// fio's io_uring engine does: every I/O is submitted on its own as soon
// as its slot is free, by an io_uring_enter that also posts whatever has
// completed meanwhile, and the thread waits only when nothing has. On a
// virtual machine this matters: submitting a whole batch per enter and
// then sleeping left the vCPU idle, and every wake-up cost the device
// queue tens of microseconds (about 0.8× fio's IOPS at QD 32 here).
func (j *job) uringWorker(m *meter, offs *offsets, n int) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	qd, block := j.p.QD, j.p.Block
	// Buffers first: deferred calls run in reverse, so the ring is closed
	// (nothing in flight) before its buffers are unmapped.
	mem, err := allocAligned(qd * int(block))
	if err != nil {
		return err
	}
	defer freeAligned(mem)
	fill(mem, j.t.cfg.Seed+uint64(n)+1)
	ring, err := uring.New(uint32(qd), uring.Options{SingleIssuer: true, Raw: true})
	if err != nil {
		return fmt.Errorf("disk: io_uring: %w", err)
	}
	defer ring.Close()
	fd := int32(j.t.f.Fd())
	if j.p.Sync == result.SyncFdatasync {
		return j.uringCommits(ring, m, offs, fd, mem[:block])
	}
	var rwFlags uint32
	if j.p.Sync == result.SyncDsync {
		rwFlags = unix.RWF_DSYNC // O_DSYNC for each write
	}
	slots := make([]slot, qd)
	for i := range slots {
		slots[i].buf = mem[int64(i)*block : int64(i+1)*block]
	}
	// prepare readies the next I/O in slot i; the next wait submits it,
	// with the others prepared since, in the same system call (one
	// io_uring_enter an I/O at QD1, not two; fio batches alike). Its
	// latency runs from just before that call: what it spends between
	// here and there is the reaping of the completions beside its own,
	// nanoseconds. Four hosts on this 2-core machine, random 8 KiB reads
	// at QD6, read 0.92 of fio's IOPS with a call to submit each I/O and
	// another to wait.
	prepare := func(i int) error {
		sqe := ring.SQE()
		if sqe == nil { // cannot happen: at most qd are outstanding
			return errors.New("disk: io_uring submission ring full")
		}
		s := &slots[i]
		s.off, s.read = offs.next()
		sqe.Fd, sqe.Off, sqe.Addr, sqe.Len, sqe.UserData = fd, uint64(s.off), uring.Addr(s.buf), uint32(block), uint64(i)
		if s.read {
			sqe.Opcode = uring.OpRead
		} else {
			sqe.Opcode, sqe.OpFlags = uring.OpWrite, rwFlags
		}
		s.start = time.Now()
		return nil
	}
	for i := range qd {
		if err := prepare(i); err != nil {
			return err
		}
	}
	cqes := make([]uring.CQE, qd)
	stopping := false
	for {
		k := ring.Reap(cqes)
		if k == 0 {
			if stopping && ring.InFlight() == 0 {
				return err
			}
			if _, serr := ring.Submit(1); serr != nil {
				return fmt.Errorf("disk: %w", serr)
			}
			continue
		}
		now := time.Now()
		m.mu.Lock()
		for _, c := range cqes[:k] {
			s := &slots[c.UserData]
			if c.Res != int32(block) {
				if err == nil {
					err = j.ioError(s.read, s.off, errnoOf(c.Res, s.read))
				}
				continue
			}
			m.cur.io(s.read, block, now.Sub(s.start))
		}
		m.mu.Unlock()
		if !stopping && (err != nil || j.stop.Load() || !now.Before(j.deadline)) {
			stopping = true
		}
		if stopping {
			continue
		}
		for _, c := range cqes[:k] {
			if serr := prepare(int(c.UserData)); serr != nil {
				return serr
			}
		}
	}
}

// uringCommits is the log writer: a write, then its fdatasync, one at a
// time. Each is submitted by one io_uring_enter and waited for by the
// next, so the write and the flush are timed from the moment the kernel
// holds them to their completion, as fio times its clat and sync latency;
// the commit is timed whole, from before the write's submission to the
// flush's completion: what a committing session waits. An operation the
// kernel finishes inside the submitting call (a buffered write that only
// copies into the page cache, as XFS and btrfs do it) was held by the
// kernel from that call's start: timed from after it, it read 80 ns.
func (j *job) uringCommits(ring *uring.Ring, m *meter, offs *offsets, fd int32, buf []byte) error {
	block := j.p.Block
	var c [1]uring.CQE
	// run submits the prepared entry, then waits for its completion; it
	// returns the result, when the kernel took it and when it was done.
	run := func() (res int32, took, done time.Time, err error) {
		t0 := time.Now()
		if _, err = ring.Submit(0); err != nil {
			return 0, took, done, fmt.Errorf("disk: %w", err)
		}
		took = time.Now()
		if ring.Reap(c[:]) == 1 { // done within the submitting call
			return c[0].Res, t0, took, nil
		}
		for ring.Reap(c[:]) == 0 {
			if _, err = ring.Submit(1); err != nil {
				return 0, took, done, fmt.Errorf("disk: %w", err)
			}
		}
		return c[0].Res, took, time.Now(), nil
	}
	for !j.stop.Load() {
		off, _ := offs.next()
		sqe := ring.SQE()
		sqe.Opcode, sqe.Fd, sqe.Off, sqe.Addr, sqe.Len = uring.OpWrite, fd, uint64(off), uring.Addr(buf), uint32(block)
		t0 := time.Now()
		res, wIssued, wDone, err := run()
		if err != nil {
			return err
		}
		if res != int32(block) {
			return j.ioError(false, off, errnoOf(res, false))
		}
		sqe = ring.SQE()
		sqe.Opcode, sqe.Fd, sqe.OpFlags = uring.OpFsync, fd, uring.FsyncDatasync
		res, fIssued, fDone, err := run()
		if err != nil {
			return err
		}
		if res != 0 {
			return j.t.placeErr("flush (fdatasync) the test file", errnoOf(res, false))
		}
		m.mu.Lock()
		m.cur.commit(block, fDone.Sub(t0), wDone.Sub(wIssued), fDone.Sub(fIssued))
		m.mu.Unlock()
		if !fDone.Before(j.deadline) {
			break
		}
	}
	return nil
}
