//go:build linux

package uring

import (
	"bytes"
	"path/filepath"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/testenv"
)

// newRing makes a ring on the calling goroutine's locked thread, or skips
// (fails under CI=true) when this machine refuses io_uring.
func newRing(t *testing.T, entries uint32, opts Options) *Ring {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := New(entries, opts)
	if err != nil {
		testenv.Need(t, testenv.Host, "io_uring is refused here: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestABILayout: the structs match the uapi header byte for byte.
func TestABILayout(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_sqe", unsafe.Sizeof(SQE{}), 64},
		{"io_uring_cqe", unsafe.Sizeof(CQE{}), 16},
		{"io_sqring_offsets", unsafe.Sizeof(sqOffsets{}), 40},
		{"io_cqring_offsets", unsafe.Sizeof(cqOffsets{}), 40},
		{"io_uring_params", unsafe.Sizeof(params{}), 120},
		{"sqe.off", unsafe.Offsetof(SQE{}.Off), 8},
		{"sqe.addr", unsafe.Offsetof(SQE{}.Addr), 16},
		{"sqe.len", unsafe.Offsetof(SQE{}.Len), 24},
		{"sqe.rw_flags", unsafe.Offsetof(SQE{}.OpFlags), 28},
		{"sqe.user_data", unsafe.Offsetof(SQE{}.UserData), 32},
		{"sqe.buf_index", unsafe.Offsetof(SQE{}.BufIndex), 40},
		{"cqe.res", unsafe.Offsetof(CQE{}.Res), 8},
		{"params.sq_off", unsafe.Offsetof(params{}.sqOff), 40},
		{"params.cq_off", unsafe.Offsetof(params{}.cqOff), 80},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, c.got, c.want)
		}
	}
}

// TestAccounting: every entry handed out is submitted once and completes
// once; the ring refuses entries beyond its size and beyond what the
// completion ring can hold.
func TestAccounting(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
	}{{"plain", Options{}}, {"single issuer", Options{SingleIssuer: true}}, {"single issuer, raw waits", Options{SingleIssuer: true, Raw: true}}} {
		opts := c.opts
		t.Run(c.name, func(t *testing.T) {
			r := newRing(t, 8, opts)
			if r.Entries() != 8 || r.CQEntries() < r.Entries() {
				t.Fatalf("entries %d, cq entries %d", r.Entries(), r.CQEntries())
			}
			if r.Features()&FeatSingleMMap == 0 {
				t.Logf("kernel without IORING_FEAT_SINGLE_MMAP: two mappings")
			}
			// Fill the submission ring: exactly Entries SQEs, then nil.
			for i := range r.Entries() {
				sqe := r.SQE()
				if sqe == nil {
					t.Fatalf("SQE %d of %d: ring full too early", i, r.Entries())
				}
				sqe.Opcode, sqe.UserData = OpNop, uint64(100+i)
			}
			if r.SQE() != nil {
				t.Fatal("an SQE beyond the ring's size")
			}
			if r.Pending() != 8 || r.InFlight() != 0 {
				t.Fatalf("pending %d in flight %d before submit", r.Pending(), r.InFlight())
			}
			n, err := r.Submit(8)
			if err != nil || n != 8 {
				t.Fatalf("submit: %d, %v", n, err)
			}
			if r.Pending() != 0 || r.InFlight() != 8 {
				t.Fatalf("pending %d in flight %d after submit", r.Pending(), r.InFlight())
			}
			// Reap in small batches: order and user data are kept.
			buf := make([]CQE, 3)
			var seen []uint64
			for len(seen) < 8 {
				k := r.Reap(buf)
				if k == 0 {
					if _, err := r.Submit(1); err != nil {
						t.Fatal(err)
					}
					continue
				}
				for _, c := range buf[:k] {
					if c.Res != 0 {
						t.Fatalf("NOP completed with %d", c.Res)
					}
					seen = append(seen, c.UserData)
				}
			}
			for i, ud := range seen {
				if ud != uint64(100+i) {
					t.Fatalf("completion %d carries %d, want %d", i, ud, 100+i)
				}
			}
			if r.InFlight() != 0 || r.Reap(buf) != 0 {
				t.Fatalf("in flight %d after reaping everything", r.InFlight())
			}
			// With the completion ring as the limit: keep entries
			// outstanding unreaped and the ring stops handing out SQEs
			// once in-flight plus pending reach its size.
			given := 0
			for r.SQE() != nil {
				given++
				if uint32(given)%r.Entries() == 0 {
					if _, err := r.Submit(0); err != nil {
						t.Fatal(err)
					}
				}
				if given > 10*int(r.CQEntries()) {
					t.Fatal("the ring never refused")
				}
			}
			r.Submit(0)
			if uint32(given) != r.CQEntries() {
				t.Fatalf("handed out %d entries with none reaped, want the completion ring's %d", given, r.CQEntries())
			}
			big := make([]CQE, 2*r.CQEntries())
			reaped := 0
			deadline := time.Now().Add(5 * time.Second)
			for r.InFlight() > 0 && time.Now().Before(deadline) {
				r.Submit(1)
				reaped += r.Reap(big)
			}
			if reaped != given || r.InFlight() != 0 {
				t.Fatalf("reaped %d of %d, %d still in flight", reaped, given, r.InFlight())
			}
		})
	}
}

// TestFileIO: write, fdatasync and read back through the ring on a real
// file, with O_DIRECT where the filesystem takes it.
func TestFileIO(t *testing.T) {
	// A plain ring: the subtests below run on goroutines of their own, and
	// a single-issuer ring answers another thread with EEXIST.
	r := newRing(t, 4, Options{})
	if ok, err := r.Supports(OpRead, OpWrite, OpFsync); err != nil || !ok {
		t.Fatalf("kernel 6.x must support READ/WRITE/FSYNC: %v %v", ok, err)
	}
	path := filepath.Join(t.TempDir(), "ring.dat")
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 1<<20); err != nil {
		t.Fatal(err)
	}
	direct := false
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl|unix.O_DIRECT)
		direct = err == nil
	}
	t.Logf("O_DIRECT: %v", direct)
	mem, err := unix.Mmap(-1, 0, 3*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	out, in := mem[:8192], mem[8192:]
	for i := range out {
		out[i] = byte(i*7 + 3)
	}

	// do runs one operation on the file (prep may point it elsewhere) and
	// returns its result; t is the (sub)test calling it.
	do := func(t *testing.T, prep func(*SQE)) int32 {
		t.Helper()
		sqe := r.SQE()
		sqe.Fd, sqe.UserData = int32(fd), 42
		prep(sqe)
		if n, err := r.Submit(1); err != nil || n != 1 {
			t.Fatalf("submit: %d %v", n, err)
		}
		var c [1]CQE
		for r.Reap(c[:]) == 0 {
			r.Submit(1)
		}
		if c[0].UserData != 42 {
			t.Fatalf("user data %d", c[0].UserData)
		}
		return c[0].Res
	}
	cases := []struct {
		name string
		prep func(*SQE)
		want int32
	}{
		{"write 8 KiB at 64 KiB", func(s *SQE) { s.Opcode, s.Addr, s.Len, s.Off = OpWrite, Addr(out), 8192, 65536 }, 8192},
		{"fdatasync", func(s *SQE) { s.Opcode, s.OpFlags = OpFsync, FsyncDatasync }, 0},
		{"read 4 KiB back at 68 KiB", func(s *SQE) { s.Opcode, s.Addr, s.Len, s.Off = OpRead, Addr(in), 4096, 65536+4096 }, 4096},
		{"read past the end", func(s *SQE) { s.Opcode, s.Addr, s.Len, s.Off = OpRead, Addr(in), 4096, 1<<20 }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := do(t, c.prep); got != c.want {
				t.Fatalf("res %d, want %d", got, c.want)
			}
		})
	}
	// The read at 68 KiB returned the second 4 KiB of what was written
	// (the last read, past the end, left the buffer alone).
	if !bytes.Equal(in, out[4096:]) {
		t.Fatal("read back differs from what was written")
	}
	t.Run("error completion", func(t *testing.T) {
		dir, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(dir)
		res := do(t, func(s *SQE) { s.Opcode, s.Fd, s.Addr, s.Len = OpRead, int32(dir), Addr(in), 4096 })
		if res != -int32(unix.EISDIR) {
			t.Fatalf("read of a directory: res %d, want -EISDIR", res)
		}
	})
}
