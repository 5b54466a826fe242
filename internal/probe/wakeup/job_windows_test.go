//go:build windows

package wakeup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// TestJobFailsOnWindows: a job that fails ends the run with an error
// that names the program and its exit status.
func TestJobFailsOnWindows(t *testing.T) {
	path, err := exec.LookPath("cmd")
	if err != nil {
		t.Skipf("cmd: %v", err)
	}
	_, err = RunJob(context.Background(), Config{Duration: 20 * time.Second, Settle: 10 * time.Millisecond}, Job{Path: path, Args: []string{"/c", "exit 3"}, Name: "cmd.exe"})
	if err == nil || !strings.Contains(err.Error(), "the job (cmd.exe) failed") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("a job that exits 3: %v, want its failure named", err)
	}
}

// TestContainKills: the job object the job runs in kills its processes
// when narrows lets go of it (and when narrows ends, however it ends: the
// handle closes with the process), a process the job started at once
// among them: the job is created suspended and put in the job object
// before it runs (group), so its first moments cannot escape. Until then
// it does not run.
func TestContainKills(t *testing.T) {
	if dir := os.Getenv("NARROWS_JOB_HELPER"); dir != "" {
		// The job: it starts a child at once, says so, and sleeps.
		if os.Getenv("NARROWS_JOB_CHILD") != "" {
			os.WriteFile(filepath.Join(dir, "child"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600) //nolint:errcheck // the test waits for it
			time.Sleep(30 * time.Second)
			return
		}
		child := exec.Command(os.Args[0], "-test.run", "^TestContainKills$")
		child.Env = append(os.Environ(), "NARROWS_JOB_CHILD=1")
		if err := child.Start(); err != nil {
			os.Exit(3)
		}
		os.WriteFile(filepath.Join(dir, "job"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600) //nolint:errcheck // the test waits for it
		time.Sleep(30 * time.Second)
		return
	}
	dir, err := os.MkdirTemp("", "narrows-contain")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// One by one: RemoveAll's unlinkat fails under Wine
		// ("Invalid function") on a file another process wrote.
		for _, f := range []string{"child", "job", ""} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
				t.Logf("removing %s: %v", filepath.Join(dir, f), err)
			}
		}
	}()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestContainKills$")
	cmd.Env = append(os.Environ(), "NARROWS_JOB_HELPER="+dir)
	group(cmd, true)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(time.Second)
	if _, err := os.Stat(filepath.Join(dir, "job")); err == nil {
		cmd.Process.Kill() //nolint:errcheck
		t.Fatal("the job ran before it was put in its job object: it was not created suspended")
	}
	release, err := contain(cmd)
	if err != nil {
		t.Fatal(err)
	}
	child := waitPid(t, filepath.Join(dir, "child"))
	waitPid(t, filepath.Join(dir, "job"))
	release()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill() //nolint:errcheck
		t.Fatal("released, and the job's process still ran 10 s later")
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		p, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(child))
		if err != nil {
			break // gone
		}
		ev, _ := windows.WaitForSingleObject(p, 0)
		windows.CloseHandle(p) //nolint:errcheck
		if ev == windows.WAIT_OBJECT_0 {
			break // ended
		}
		if time.Now().After(end) {
			t.Fatalf("released, and the process the job started at once (%d) still ran 10 s later", child)
		}
	}
}
