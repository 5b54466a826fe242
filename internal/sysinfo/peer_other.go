//go:build !linux

package sysinfo

import (
	"errors"
	"net"
	"time"
)

// PeerProcess: only Linux's /proc tells it here.
func PeerProcess(local, remote net.Addr) (int, error) {
	return 0, errors.New("not on this OS")
}

// ProcessCPU: only Linux's /proc tells it here.
func ProcessCPU(pid int) (time.Duration, error) { return 0, errors.New("not on this OS") }
