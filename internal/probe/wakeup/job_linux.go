//go:build linux

package wakeup

import (
	"os/exec"
	"syscall"
)

// group puts the job in a process group of its own, killed whole when the
// run is cancelled, and has the kernel kill it if narrows dies first (the
// thread that starts it stays locked until it ends: jobs.run).
func group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// contain kills, once the job has ended, what it left running in its group
// (a program it started in the background): nothing narrows starts
// outlives the run.
func contain(cmd *exec.Cmd) (release func()) {
	pid := cmd.Process.Pid
	return func() { syscall.Kill(-pid, syscall.SIGKILL) } //nolint:errcheck // ESRCH: nothing was left
}
