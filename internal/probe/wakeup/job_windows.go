//go:build windows

package wakeup

import (
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// group has the job created suspended: contain puts it in its job object
// before its first instruction runs, so nothing it starts escapes.
func group(cmd *exec.Cmd, _ bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED}
}

func nsRefused(error) bool { return false }

// contain puts the job, still suspended (group), in a job object that
// kills every process in it when its handle closes: when the run
// releases it, or when narrows ends, however it ends. Then it lets the
// job run. Where the job object cannot be made, the job runs as a plain
// process, killed alone when the run is cancelled; where it cannot be let
// run, it is killed and the error says why.
func contain(cmd *exec.Cmd) (release func(), err error) {
	pid := uint32(cmd.Process.Pid)
	job := jobObject(pid)
	if err := resume(pid); err != nil {
		cmd.Process.Kill() //nolint:errcheck // it never ran
		if job != 0 {
			windows.CloseHandle(job) //nolint:errcheck // nothing to do
		}
		return func() {}, fmt.Errorf("letting the job run once started suspended: %w", err)
	}
	if job == 0 {
		return func() {}, nil
	}
	return func() { windows.CloseHandle(job) }, nil //nolint:errcheck // nothing to do
}

// jobObject is a kill-on-close job object holding process pid, or 0 where
// one cannot be made or the process not put in it.
func jobObject(pid uint32) windows.Handle {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job) //nolint:errcheck // nothing to do
		return 0
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		windows.CloseHandle(job) //nolint:errcheck // nothing to do
		return 0
	}
	defer windows.CloseHandle(p) //nolint:errcheck // nothing to do
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		windows.CloseHandle(job) //nolint:errcheck // nothing to do
		return 0
	}
	return job
}

// resume lets run the threads of process pid (a process created
// suspended has one): os/exec keeps no handle to it, so it is found in a
// snapshot of this host's threads.
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("a snapshot of the threads: %w", err)
	}
	defer windows.CloseHandle(snap) //nolint:errcheck // nothing to do
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		h, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("opening its thread %d: %w", te.ThreadID, err)
		}
		_, err = windows.ResumeThread(h)
		windows.CloseHandle(h) //nolint:errcheck // nothing to do
		if err != nil {
			return fmt.Errorf("resuming its thread %d: %w", te.ThreadID, err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("no thread of process %d in the snapshot", pid)
	}
	return nil
}
