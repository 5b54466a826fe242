//go:build !linux && !windows

package sysinfo

// ReadTCPInfo is Linux and Windows only; elsewhere the figure is not invented.
func ReadTCPInfo(rc Controller) (*TCPInfo, error) { return nil, ErrUnavailable }

const noTCPInfo = "TCP_INFO not available on this platform"

// tcpBufferMax is not known here (Windows autotunes its receive window by
// a level, not a byte count).
func tcpBufferMax() (rmem, wmem int64) { return 0, 0 }

func tcpBuffers() (rmem, wmem [3]int64) { return }
