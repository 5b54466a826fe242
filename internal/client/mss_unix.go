//go:build unix

package client

import "golang.org/x/sys/unix"

// clampMSS sets TCP_MAXSEG on a socket before it connects.
func clampMSS(fd uintptr, mss int) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss)
}
