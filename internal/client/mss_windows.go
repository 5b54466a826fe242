package client

import "errors"

// clampMSS: Windows offers no way to clamp one connection's MSS before it
// connects (its TCP_MAXSEG can only be read), so a path-MTU search runs
// from a Linux or macOS client.
func clampMSS(fd uintptr, mss int) error {
	return errors.New("cannot set TCP_MAXSEG on Windows; run narrows net mtu from a Linux or macOS client to search the size")
}
