//go:build !linux

package dbserver

import (
	"os/exec"
	"syscall"
)

// asChild is Linux-only; elsewhere the servers run as started.
func asChild(cmd *exec.Cmd, u string, sig syscall.Signal) error { return nil }
