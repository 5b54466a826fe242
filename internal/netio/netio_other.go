//go:build !linux

package netio

import "net"

// Run calls loop on Go's own socket handling: the raw path is Linux-only.
func Run(c net.Conn, loop func(Conn) error) error { return portable(c, loop) }
