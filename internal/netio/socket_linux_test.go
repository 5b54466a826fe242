//go:build linux

package netio

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// epollTargets lists the descriptors registered in this process's epoll
// instances (Go's netpoller among them), from /proc/self/fdinfo.
func epollTargets(t *testing.T) map[int]bool {
	t.Helper()
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	polls := 0
	for _, p := range fds {
		link, err := os.Readlink(p)
		if err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		polls++
		info, err := os.ReadFile("/proc/self/fdinfo/" + filepath.Base(p))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			var fd int
			if _, err := fmt.Sscanf(line, "tfd: %d", &fd); err == nil {
				out[fd] = true
			}
		}
	}
	if polls == 0 {
		t.Fatal("no epoll instance found: Go's netpoller should have one")
	}
	return out
}

func fdOf(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

func TestTakeLeavesTheNetpoller(t *testing.T) {
	a, b := pair(t)
	fa := fdOf(t, a)
	if !epollTargets(t)[fa] {
		t.Fatalf("fd %d is not in the netpoller before Take: the check itself is broken", fa)
	}
	s, err := Take(a)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.conn != nil {
		t.Fatal("a TCP connection took the portable path on Linux")
	}
	reg := epollTargets(t)
	if reg[fa] || reg[s.fd] {
		t.Fatalf("after Take the socket is still in the netpoller (fd %d or %d in %v)", fa, s.fd, reg)
	}
	// The connection itself lives on in the Socket.
	if _, err := b.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if err := s.Run(func(c Conn) error { return ReadFull(c, buf, nil, Slice*5) }); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}
}

// More loops than Ps: only GOMAXPROCS-1 of them keep their P through the
// kernel call, so none starves and every byte arrives.
func TestRawLoopsLeaveAPFree(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const loops, perLoop = 5, 1 << 20
	var wg sync.WaitGroup
	errs := make(chan error, loops)
	var most atomic.Int32
	for range loops {
		a, b := pair(t)
		s, err := Take(b)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		wg.Add(2)
		go func() {
			defer wg.Done()
			chunk := make([]byte, 64<<10)
			for sent := 0; sent < perLoop; sent += len(chunk) {
				if _, err := a.Write(chunk); err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
			a.(*net.TCPConn).CloseWrite()
		}()
		go func() {
			defer wg.Done()
			var n atomic.Int64
			err := s.Run(func(c Conn) error {
				for {
					if k := rawLoops.Load(); k > most.Load() {
						most.Store(k)
					}
					buf := make([]byte, 32<<10)
					if err := ReadFull(c, buf, nil, 5*time.Second); err != nil {
						if err == io.EOF {
							return nil
						}
						return err
					}
					n.Add(int64(len(buf)))
				}
			})
			if err == nil && n.Load() != perLoop {
				err = fmt.Errorf("received %d bytes, want %d", n.Load(), perLoop)
			}
			errs <- err
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("loops starved: not finished in 30 s")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m := most.Load(); m < 1 || m > 1 {
		t.Fatalf("at most %d loops ran raw at once, want exactly 1 (GOMAXPROCS 2 - 1)", m)
	}
	if k := rawLoops.Load(); k != 0 {
		t.Fatalf("%d raw loops counted after all returned", k)
	}
}

// A batch is set in the kernel, and a read still returns the few bytes
// there when its slice (or a signal) ends the wait: nothing is held back.
func TestReadBatch(t *testing.T) {
	a, b := pair(t)
	s, err := Take(b)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ReadBatch(1000); err != nil {
		t.Fatal(err)
	}
	got := -1
	s.Control(func(fd uintptr) { got, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT) })
	if err != nil || got != 1000 {
		t.Fatalf("SO_RCVLOWAT is %d (%v), want 1000", got, err)
	}
	if _, err := a.Write(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(func(c Conn) error { return ReadFull(c, make([]byte, 10), nil, 5*Slice) }); err != nil {
		t.Fatalf("reading 10 bytes below the batch: %v", err)
	}
}

// Reads are batched only where autotuning may grow the receive buffer far
// past a batch, and never under a fixed window.
func TestBatchFor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		window    int64
		maxBuffer int
		want      int
	}{
		{"autotuned, Linux's default 6 MiB maximum", 0, 6 << 20, Batch},
		{"autotuned, this machine's 32 MiB maximum", 0, 32 << 20, Batch},
		{"autotuned, exactly 32 batches", 0, 32 * Batch, Batch},
		{"autotuned, but the host caps the buffer at 128 KiB", 0, 128 << 10, 1},
		{"the maximum cannot be read", 0, 0, 1},
		{"a fixed window", 64 << 10, 32 << 20, 1},
	} {
		if got := batchFor(tc.window, tc.maxBuffer); got != tc.want {
			t.Errorf("%s: batchFor(%d, %d) = %d, want %d", tc.name, tc.window, tc.maxBuffer, got, tc.want)
		}
	}
	if maxReceiveBuffer() <= 0 {
		t.Error("cannot read net.ipv4.tcp_rmem on Linux")
	}
}
