//go:build !linux

package netio

import (
	"errors"
	"net"
)

// take keeps Go's own socket handling: the raw path is Linux-only.
func take(c net.Conn) (*Socket, error) { return &Socket{conn: c}, nil }

// The raw path is never taken here.
func runRaw(int, func(Conn) error) error { return errors.ErrUnsupported }
func shutdownWrite(int) error            { return errors.ErrUnsupported }
func setReadLowWater(int, int) error     { return errors.ErrUnsupported }
func maxReceiveBuffer() int              { return 0 } // no batching here
func closeFD(int) error                  { return errors.ErrUnsupported }
func sameHost(int) bool                  { return false } // no batching here
