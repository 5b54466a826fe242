package dbtest

import (
	"testing"

	"golang.org/x/sys/unix"
)

// closedPort is a loopback port nobody listens on, for the rest of t: a
// socket bound to it and never listening holds it, so that a connection
// to it is refused and no other test's listener takes it in between
// (packages run side by side: a port found free and let go was taken by
// one within the test, which then found a listener there).
func closedPort(t *testing.T) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*unix.SockaddrInet4).Port
}
