//go:build !linux

package sysinfo

import "syscall"

// ReadTCPInfo is Linux-only for now; elsewhere the figure is not invented.
func ReadTCPInfo(rc syscall.RawConn) (*TCPInfo, error) { return nil, ErrUnavailable }
