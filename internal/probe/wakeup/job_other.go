//go:build !linux && !windows

package wakeup

import "os/exec"

func group(*exec.Cmd) {}

func contain(*exec.Cmd) func() { return func() {} }
