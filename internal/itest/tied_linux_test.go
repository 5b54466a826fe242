//go:build linux

package itest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tiedParent, set in the environment, makes the test binary the parent
// of TestStartTied: it starts a tied child, ends threads of its own, says
// the child's pid and whether it outlived them, and waits to be killed.
const tiedParent = "NARROWS_ITEST_TIED_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(tiedParent) != "" {
		tiedParentMain()
		return
	}
	os.Exit(m.Run())
}

func tiedParentMain() {
	// The main thread is this goroutine's: Go never ends it, and a child
	// started on it would outlive the churn below whatever StartTied did.
	runtime.LockOSThread()
	child := exec.Command("sleep", "300")
	if err := StartTied(child); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// Threads end here (a goroutine that exits locked to its thread ends
	// it, as the testbed's Host.Do may): the child must not end with any.
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() { runtime.LockOSThread() })
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond)
	fmt.Println("child", child.Process.Pid, running(child.Process.Pid))
	select {}
}

// A tied child outlives the threads of its parent that end, and dies with
// the parent killed with SIGKILL.
func TestStartTied(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), tiedParent+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill() //nolint:errcheck
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the parent said %q: %v", line, err)
	}
	var pid int
	var alive bool
	if f := strings.Fields(line); len(f) == 3 && f[0] == "child" {
		pid, _ = strconv.Atoi(f[1])
		alive = f[2] == "true"
	}
	if pid == 0 {
		t.Fatalf("the parent said %q", line)
	}
	defer syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck
	if !alive {
		t.Fatal("the tied child ended with one of its parent's threads, the parent alive")
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	parent.Wait() //nolint:errcheck
	for deadline := time.Now().Add(10 * time.Second); running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tied child %d outlived its parent killed with SIGKILL by 10 s", pid)
		}
	}
}

// running says whether process pid exists and has not ended: a child
// killed and not yet reaped is a zombie (state Z in /proc/PID/stat), which
// kill(pid, 0) still finds.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}
