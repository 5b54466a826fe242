//go:build !linux

package netio

import "net"

// Blocking is Linux-only: elsewhere the connection keeps Go's own sockets.
func Blocking(c net.Conn) (net.Conn, error) { return c, nil }
