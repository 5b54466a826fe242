//go:build !linux

package itest

import "os/exec"

// StartTied starts cmd. Off Linux nothing ties a child to its parent's
// life; the tests' cleanups end it.
func StartTied(cmd *exec.Cmd) error { return cmd.Start() }
