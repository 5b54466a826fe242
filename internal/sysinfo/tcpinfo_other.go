//go:build !linux && !windows

package sysinfo

// ReadTCPInfo is Linux and Windows only; elsewhere the figure is not invented.
func ReadTCPInfo(rc Controller) (*TCPInfo, error) { return nil, ErrUnavailable }

const noTCPInfo = "TCP_INFO not available on this platform"

// tcpBuffers is not known here: zeros, which ReadTCPBuffers leaves out.
func tcpBuffers() (rmem, wmem [3]int64) { return }
