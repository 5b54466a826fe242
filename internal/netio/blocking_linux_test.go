//go:build linux

package netio

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func TestBlocking(t *testing.T) {
	t.Run("a session's bytes go both ways", func(t *testing.T) {
		a, b := pair(t)
		c, err := Blocking(a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, ok := c.(*blockingConn); !ok {
			t.Fatalf("a TCP connection kept Go's sockets: %T", c)
		}
		go func() { io.Copy(b, b) }() // echo
		msg := []byte("SELECT 1")
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != string(msg) {
			t.Fatalf("echo %q, %v", got, err)
		}
	})
	t.Run("a read deadline is a timeout", func(t *testing.T) {
		a, _ := pair(t)
		c, err := Blocking(a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read past the deadline: %v, want a timeout", err)
		}
	})
	t.Run("close wakes a blocked read", func(t *testing.T) {
		a, _ := pair(t)
		c, err := Blocking(a)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := c.Read(make([]byte, 1)); done <- err }()
		time.Sleep(20 * time.Millisecond)
		c.Close()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("read after close returned no error")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not wake the blocked read")
		}
		if k := rawLoops.Load(); k != 0 {
			t.Fatalf("%d raw places still held after close", k)
		}
	})
}
