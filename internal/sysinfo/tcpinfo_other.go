//go:build !linux

package sysinfo

// ReadTCPInfo is Linux-only for now; elsewhere the figure is not invented.
func ReadTCPInfo(rc Controller) (*TCPInfo, error) { return nil, ErrUnavailable }
