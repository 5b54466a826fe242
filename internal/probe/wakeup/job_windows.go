//go:build windows

package wakeup

import (
	"os/exec"
	"unsafe"

	"golang.org/x/sys/windows"
)

func group(*exec.Cmd) {}

// contain puts the job in a job object that kills every process in it
// when its handle closes: when the run releases it, or when narrows ends,
// however it ends. A process the job starts before it is put in (its
// first moments) escapes; where the job object cannot be made, the job
// runs as a plain process, killed alone when the run is cancelled.
func contain(cmd *exec.Cmd) (release func()) {
	nothing := func() {}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nothing
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job) //nolint:errcheck // nothing to do
		return nothing
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job) //nolint:errcheck // nothing to do
		return nothing
	}
	defer windows.CloseHandle(p) //nolint:errcheck // nothing to do
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		windows.CloseHandle(job) //nolint:errcheck // nothing to do
		return nothing
	}
	return func() { windows.CloseHandle(job) } //nolint:errcheck // nothing to do
}
