//go:build !linux

package sysinfo

// ReadTCPInfo is Linux-only for now; elsewhere the figure is not invented.
func ReadTCPInfo(rc Controller) (*TCPInfo, error) { return nil, ErrUnavailable }

// tcpBufferMax is not known here (Windows autotunes its receive window by
// a level, not a byte count).
func tcpBufferMax() (rmem, wmem int64) { return 0, 0 }
