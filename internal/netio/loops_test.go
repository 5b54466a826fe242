package netio

import (
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

func TestLoops(t *testing.T) {
	t.Run("receive counts until EOF", func(t *testing.T) {
		a, b := pair(t)
		go func() { a.Write(make([]byte, 300_000)); a.(*net.TCPConn).CloseWrite() }()
		var stop atomic.Bool
		var n atomic.Int64
		err := Run(b, func(c Conn) error { return Receive(c, make([]byte, 4096), &stop, &n, time.Second) })
		if err != nil || n.Load() != 300_000 {
			t.Fatalf("err %v, %d bytes, want 300000", err, n.Load())
		}
	})
	t.Run("silent peer ends the loop at the idle limit", func(t *testing.T) {
		_, b := pair(t)
		var stop atomic.Bool
		var n atomic.Int64
		t0 := time.Now()
		err := Run(b, func(c Conn) error { return Receive(c, make([]byte, 4096), &stop, &n, 3*Slice) })
		if err == nil || !strings.Contains(err.Error(), "nothing arrived") || time.Since(t0) > 2*time.Second {
			t.Fatalf("err %v after %s", err, time.Since(t0))
		}
	})
	t.Run("stop ends a read within a slice", func(t *testing.T) {
		_, b := pair(t)
		var stop atomic.Bool
		time.AfterFunc(150*time.Millisecond, func() { stop.Store(true) })
		err := Run(b, func(c Conn) error { return ReadFull(c, make([]byte, 10), &stop, time.Minute) })
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
			done <- Run(b, func(c Conn) error { return Receive(c, make([]byte, 65536), &halt, &got, time.Second) })
		}()
		time.AfterFunc(200*time.Millisecond, func() { stop.Store(true) })
		if err := Run(a, func(c Conn) error { return Send(c, make([]byte, 65536), &stop, &sent, time.Second) }); err != nil {
			t.Fatal(err)
		}
		a.(*net.TCPConn).CloseWrite()
		if err := <-done; err != nil || sent.Load() == 0 || got.Load() != sent.Load() {
			t.Fatalf("err %v, sent %d, received %d", err, sent.Load(), got.Load())
		}
	})
}
