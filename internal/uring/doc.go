// Package uring is a minimal io_uring ring over raw system calls (no cgo):
// io_uring_setup, the mmap of the submission and completion rings, and
// io_uring_enter to submit and wait. It owns the ring memory and its
// memory ordering (head and tail through sync/atomic) and nothing else:
// it opens no files, allocates no I/O buffers and keeps no statistics.
// Rings exist on Linux only: elsewhere the package holds just the ABI
// types below, and callers (internal/probe/disk) use their portable path.
//
// The ABI (struct layouts, mmap offsets, opcodes and flags) follows the
// Linux uapi header include/uapi/linux/io_uring.h.
package uring

// Opcodes (enum io_uring_op).
const (
	OpNop   uint8 = 0
	OpFsync uint8 = 3
	OpRead  uint8 = 22 // IORING_OP_READ, Linux 5.6
	OpWrite uint8 = 23 // IORING_OP_WRITE, Linux 5.6
)

// FsyncDatasync (IORING_FSYNC_DATASYNC) makes OpFsync an fdatasync.
const FsyncDatasync uint32 = 1 << 0

// SQE is struct io_uring_sqe (64 bytes). OpFlags is the union of
// rw_flags (RWF_*) and fsync_flags.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	IOPrio      uint16
	Fd          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFdIn  int32
	Addr3       uint64
	_           uint64
}

// CQE is struct io_uring_cqe (16 bytes): Res is the operation's return
// value, a negative errno on failure.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}
