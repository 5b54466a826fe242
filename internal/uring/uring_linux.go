//go:build linux

package uring

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Setup flags (IORING_SETUP_*), mmap offsets (IORING_OFF_*), feature
// bits (IORING_FEAT_*), enter flags and register opcodes from the uapi
// header.
const (
	setupCoopTaskrun  = 1 << 8
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	// FeatSingleMMap: the SQ and CQ rings share one mapping (Linux 5.4).
	FeatSingleMMap = 1 << 0

	enterGetEvents = 1 << 0

	registerProbe = 8
	opSupported   = 1 << 0
)

// The layouts of struct io_sqring_offsets, io_cqring_offsets and
// io_uring_params. Their sizes are checked by the tests (40, 40, 120).
type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

// Options shape a ring.
type Options struct {
	// SingleIssuer asks for IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN|
	// COOP_TASKRUN, as fio does: completions are processed only when this
	// thread enters the kernel to reap them, with no interrupting IPIs.
	// Then only the OS thread that called New may submit (lock the
	// goroutine with runtime.LockOSThread first). Kernels that do not know
	// the flags get a plain ring.
	SingleIssuer bool
	// Raw enters the kernel without telling the Go scheduler
	// (RawSyscall): the goroutine keeps its P while it waits, so the
	// runtime neither hands the P off nor starts polling every 20 µs to
	// retake it, which on a small VM costs each wait several microseconds
	// of wake-up. Only for a goroutine on a dedicated, locked thread, with
	// GOMAXPROCS above the number of such goroutines.
	Raw bool
}

// Ring is one io_uring instance. It is not safe for concurrent use: one
// goroutine (with SingleIssuer, one OS thread) prepares, submits and reaps.
type Ring struct {
	fd int

	sqMem, cqMem, sqeMem []byte // cqMem aliases sqMem with FeatSingleMMap

	sqHead, sqTail *uint32 // shared with the kernel: atomic access only
	sqMask         uint32
	sqEntries      uint32
	sqes           []SQE
	localTail      uint32 // the next SQE to fill; published to *sqTail by Submit

	cqHead, cqTail *uint32 // shared with the kernel: atomic access only
	cqMask         uint32
	cqEntries      uint32
	cqes           []CQE

	inflight uint32 // submitted to the kernel and not yet reaped

	features   uint32
	singleMMap bool
	raw        bool
}

// New sets up a ring with at least entries submission entries (rounded up
// to a power of two by the kernel) and maps its memory.
func New(entries uint32, opts Options) (*Ring, error) {
	if entries == 0 {
		return nil, fmt.Errorf("io_uring: a ring needs at least one entry")
	}
	var p params
	if opts.SingleIssuer {
		p.flags = setupSingleIssuer | setupDeferTaskrun | setupCoopTaskrun
	}
	fd, err := setup(entries, &p)
	// Older kernels reject flags they do not know with EINVAL: drop them
	// one at a time, newest first, as fio does.
	for _, drop := range []uint32{setupDeferTaskrun | setupSingleIssuer, setupCoopTaskrun} {
		if err != unix.EINVAL || p.flags&drop == 0 {
			break
		}
		p = params{flags: p.flags &^ drop}
		fd, err = setup(entries, &p)
	}
	if err != nil {
		return nil, os.NewSyscallError("io_uring_setup", err)
	}
	r := &Ring{fd: fd, features: p.features, sqEntries: p.sqEntries, cqEntries: p.cqEntries, raw: opts.Raw}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func setup(entries uint32, p *params) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(CQE{}))
	single := p.features&FeatSingleMMap != 0
	if single && cqSize > sqSize {
		sqSize = cqSize
	}
	var err error
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	if r.sqMem, err = unix.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("io_uring: mmap of the submission ring: %w", err)
	}
	if single {
		r.cqMem, r.singleMMap = r.sqMem, true
	} else if r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
		return fmt.Errorf("io_uring: mmap of the completion ring: %w", err)
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(SQE{}))
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, sqeSize, prot, flags); err != nil {
		return fmt.Errorf("io_uring: mmap of the submission entries: %w", err)
	}
	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	r.sqHead, r.sqTail = u32(r.sqMem, p.sqOff.head), u32(r.sqMem, p.sqOff.tail)
	r.sqMask = *u32(r.sqMem, p.sqOff.ringMask)
	r.cqHead, r.cqTail = u32(r.cqMem, p.cqOff.head), u32(r.cqMem, p.cqOff.tail)
	r.cqMask = *u32(r.cqMem, p.cqOff.ringMask)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&r.cqMem[p.cqOff.cqes])), p.cqEntries)
	// The indirection array maps ring slots to SQE indexes; we always fill
	// the SQE of the slot we publish, so it is the identity, set once.
	array := unsafe.Slice((*uint32)(unsafe.Pointer(&r.sqMem[p.sqOff.array])), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.localTail = atomic.LoadUint32(r.sqTail)
	return nil
}

// Close unmaps the rings and closes the ring. Callers reap (or wait for)
// what they submitted first: the kernel may still be writing into their
// buffers otherwise.
func (r *Ring) Close() error {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
	}
	if r.cqMem != nil && !r.singleMMap {
		unix.Munmap(r.cqMem)
	}
	if r.sqMem != nil {
		unix.Munmap(r.sqMem)
	}
	r.sqeMem, r.cqMem, r.sqMem = nil, nil, nil
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// Entries is the size of the submission ring.
func (r *Ring) Entries() uint32 { return r.sqEntries }

// CQEntries is the size of the completion ring.
func (r *Ring) CQEntries() uint32 { return r.cqEntries }

// Features are the IORING_FEAT_* bits the kernel reported.
func (r *Ring) Features() uint32 { return r.features }

// InFlight is how many submitted operations have not been reaped.
func (r *Ring) InFlight() uint32 { return r.inflight }

// Pending is how many prepared entries the kernel has not taken yet.
func (r *Ring) Pending() uint32 { return r.localTail - atomic.LoadUint32(r.sqHead) }

// SQE returns the next free submission entry, zeroed, or nil when the
// submission ring is full or more operations would be outstanding than
// the completion ring holds.
func (r *Ring) SQE() *SQE {
	pending := r.Pending()
	if pending >= r.sqEntries || r.inflight+pending >= r.cqEntries {
		return nil
	}
	sqe := &r.sqes[r.localTail&r.sqMask]
	*sqe = SQE{}
	r.localTail++
	return sqe
}

// Submit hands the prepared entries to the kernel, lets it post the
// completions that are ready and, with wait > 0, blocks until at least
// wait completions are (one io_uring_enter). It returns how many entries
// the kernel took. An entry the kernel takes but cannot start still
// completes, with a negative Res.
func (r *Ring) Submit(wait uint32) (int, error) {
	// Release: the SQE contents are visible before the new tail.
	atomic.StoreUint32(r.sqTail, r.localTail)
	if wait > r.inflight+r.Pending() {
		wait = r.inflight + r.Pending()
	}
	// GETEVENTS even without waiting: a single-issuer ring posts the
	// completions that arrived meanwhile only when its thread asks.
	flags := uintptr(enterGetEvents)
	for {
		toSubmit := r.Pending()
		var n uintptr
		var errno unix.Errno
		if r.raw {
			n, _, errno = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(wait), flags, 0, 0)
		} else {
			n, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(wait), flags, 0, 0)
		}
		switch errno {
		case 0:
			r.inflight += uint32(n)
			return int(n), nil
		case unix.EINTR:
			// Nothing was submitted (the kernel returns the count when
			// anything was); the wait was cut short by a signal.
			continue
		case unix.EAGAIN, unix.EBUSY:
			// Out of resources or completions not reaped: let the
			// caller reap and try again.
			return 0, nil
		default:
			return 0, os.NewSyscallError("io_uring_enter", errno)
		}
	}
}

// Reap copies up to len(buf) ready completions into buf, in order, frees
// their slots and returns how many.
func (r *Ring) Reap(buf []CQE) int {
	head := *r.cqHead // only we move the head
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for head != tail && n < len(buf) {
		buf[n] = r.cqes[head&r.cqMask]
		head++
		n++
	}
	if n > 0 {
		// Release: the entries are copied before the kernel may reuse them.
		atomic.StoreUint32(r.cqHead, head)
		r.inflight -= uint32(n)
	}
	return n
}

// Supports reports whether the kernel implements every opcode in ops on
// this ring (IORING_REGISTER_PROBE, Linux 5.6).
func (r *Ring) Supports(ops ...uint8) (bool, error) {
	// struct io_uring_probe: 16 bytes, then 256 struct io_uring_probe_op
	// of 8 bytes (op, resv, flags, resv2).
	const nops = 256
	buf := make([]byte, 16+8*nops)
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerProbe, uintptr(unsafe.Pointer(&buf[0])), nops, 0, 0)
	if errno != 0 {
		return false, os.NewSyscallError("io_uring_register", errno)
	}
	opsLen := int(buf[1])
	for _, op := range ops {
		if int(op) >= opsLen {
			return false, nil
		}
		flags := uint16(buf[16+8*int(op)+2]) | uint16(buf[16+8*int(op)+3])<<8
		if flags&opSupported == 0 {
			return false, nil
		}
	}
	return true, nil
}

// Addr is the address of b's first byte, for SQE.Addr. The memory must
// stay alive and in place until the operation completes: use memory the
// garbage collector does not own (e.g. from mmap).
func Addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }
