//go:build linux

package wakeup

import (
	"errors"
	"os/exec"
	"syscall"
)

// group puts the job in a process group of its own, killed whole when the
// run is cancelled, and has the kernel kill it if narrows dies first (the
// thread that starts it stays locked until it ends: jobs.run). With ns,
// the job is also the first process of a PID namespace of its own (as
// bubblewrap's --unshare-pid --die-with-parent): when it ends, or is
// killed because narrows died, SIGKILL included, the kernel kills every
// process in that namespace, one it left in the background or in a
// session of its own too. The job's processes see their pids in that
// namespace (the job itself is 1); /proc is still this host's.
func group(cmd *exec.Cmd, ns bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if ns {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// nsRefused says a start failed for want of a PID namespace (a user
// without CAP_SYS_ADMIN, a kernel without them, their limit reached), so
// the job runs in its process group alone.
func nsRefused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS)
}

// contain kills, once the job has ended, what it left running in its group
// (a program it started in the background): nothing narrows starts
// outlives the run. (In a PID namespace the kernel has already killed
// them all.)
func contain(cmd *exec.Cmd) (release func(), err error) {
	pid := cmd.Process.Pid
	return func() { syscall.Kill(-pid, syscall.SIGKILL) }, nil //nolint:errcheck // ESRCH: nothing was left
}
