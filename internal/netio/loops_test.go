package netio

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// run takes c over and runs loop on it, as the probes do.
func run(t *testing.T, c net.Conn, loop func(Conn) error) error {
	t.Helper()
	s, err := Take(c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.Run(loop)
}

func TestLoops(t *testing.T) {
	t.Run("receive counts until EOF", func(t *testing.T) {
		a, b := pair(t)
		go func() { a.Write(make([]byte, 300_000)); a.(*net.TCPConn).CloseWrite() }()
		var stop atomic.Bool
		var n atomic.Int64
		err := run(t, b, func(c Conn) error { return Receive(c, make([]byte, 4096), &stop, &n, time.Second) })
		if err != nil || n.Load() != 300_000 {
			t.Fatalf("err %v, %d bytes, want 300000", err, n.Load())
		}
	})
	t.Run("silent peer ends the loop at the idle limit", func(t *testing.T) {
		_, b := pair(t)
		var stop atomic.Bool
		var n atomic.Int64
		t0 := time.Now()
		err := run(t, b, func(c Conn) error { return Receive(c, make([]byte, 4096), &stop, &n, 3*Slice) })
		if err == nil || !strings.Contains(err.Error(), "nothing arrived") || time.Since(t0) > 2*time.Second {
			t.Fatalf("err %v after %s", err, time.Since(t0))
		}
	})
	t.Run("stop ends a read within a slice", func(t *testing.T) {
		_, b := pair(t)
		var stop atomic.Bool
		time.AfterFunc(150*time.Millisecond, func() { stop.Store(true) })
		err := run(t, b, func(c Conn) error { return ReadFull(c, make([]byte, 10), &stop, time.Minute) })
		if !ErrStopped(err) {
			t.Fatalf("err %v, want stopped", err)
		}
	})
	t.Run("send counts what the receiver gets", func(t *testing.T) {
		a, b := pair(t)
		var stop, halt atomic.Bool
		var sent, got atomic.Int64
		done := make(chan error, 1)
		go func() {
			done <- run(t, b, func(c Conn) error { return Receive(c, make([]byte, 65536), &halt, &got, time.Second) })
		}()
		time.AfterFunc(200*time.Millisecond, func() { stop.Store(true) })
		sa, err := Take(a)
		if err != nil {
			t.Fatal(err)
		}
		defer sa.Close()
		if err := sa.Run(func(c Conn) error { return Send(c, make([]byte, 65536), &stop, &sent, time.Second) }); err != nil {
			t.Fatal(err)
		}
		if err := sa.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil || sent.Load() == 0 || got.Load() != sent.Load() {
			t.Fatalf("err %v, sent %d, received %d", err, sent.Load(), got.Load())
		}
	})
}

func TestSocket(t *testing.T) {
	t.Run("close write gives the peer EOF after the data", func(t *testing.T) {
		a, b := pair(t)
		s, err := Take(a)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Run(func(c Conn) error { return WriteAll(c, []byte("last"), nil, time.Second) }); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		b.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(b)
		if err != nil || string(got) != "last" {
			t.Fatalf("peer read %q, %v", got, err)
		}
	})
	t.Run("control reaches the socket until close", func(t *testing.T) {
		a, _ := pair(t)
		s, err := Take(a)
		if err != nil {
			t.Fatal(err)
		}
		called := false
		if err := s.Control(func(uintptr) { called = true }); err != nil || !called {
			t.Fatalf("control: %v, called %v", err, called)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
		if err := s.Control(func(uintptr) {}); !errors.Is(err, ErrClosed) {
			t.Fatalf("control after close: %v, want ErrClosed", err)
		}
		if err := s.Run(func(Conn) error { return nil }); !errors.Is(err, ErrClosed) {
			t.Fatalf("run after close: %v, want ErrClosed", err)
		}
	})
	t.Run("close waits for the loop", func(t *testing.T) {
		a, _ := pair(t)
		s, err := Take(a)
		if err != nil {
			t.Fatal(err)
		}
		var stop atomic.Bool
		var ended atomic.Bool
		started := make(chan struct{})
		go s.Run(func(c Conn) error {
			close(started)
			err := ReadFull(c, make([]byte, 1), &stop, time.Minute)
			ended.Store(true)
			return err
		})
		<-started
		time.AfterFunc(2*Slice, func() { stop.Store(true) })
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !ended.Load() {
			t.Fatal("Close returned while the loop still ran on the socket")
		}
	})
}
