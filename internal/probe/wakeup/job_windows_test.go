//go:build windows

package wakeup

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
// handle closes with the process).
func TestContainKills(t *testing.T) {
	if os.Getenv("NARROWS_JOB_HELPER") != "" {
		time.Sleep(30 * time.Second)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestContainKills$")
	cmd.Env = append(os.Environ(), "NARROWS_JOB_HELPER=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	release := contain(cmd)
	time.Sleep(200 * time.Millisecond)
	release()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("released, and the job's process still ran 10 s later")
	}
}
