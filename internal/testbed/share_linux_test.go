//go:build linux

package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/testenv"
)

// TestShareCountsSlots: two tests of two shares each hold the machine
// together; a third asking for one waits until one of them ends, and
// then gets it.
func TestShareCountsSlots(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // slots of this test's own
	var (
		mu    sync.Mutex
		order []string
	)
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	release := make(chan struct{})
	held := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) {
				Share(t, 2)
				note(name + " holds")
				held <- struct{}{}
				<-release
				note(name + " ends")
			})
		}()
	}
	<-held
	<-held
	third := make(chan struct{})
	go func() {
		t.Run("c", func(t *testing.T) {
			Share(t, 1)
			note("c holds")
		})
		close(third)
	}()
	select {
	case <-third:
		t.Fatalf("a fifth share was given while four were held: %v", order)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	wg.Wait()
	<-third
	if i, j := slices.Index(order, "c holds"), slices.IndexFunc(order, func(s string) bool { return strings.HasSuffix(s, " ends") }); j < 0 || i < j {
		t.Errorf("c got its share before a or b let go: %v", order)
	}
}

// TestShareFreezesBackground: make test's background work
// (scripts/background.sh) runs at SCHED_IDLE in a cgroup of its own; a
// test holding every slot freezes it for as long as it holds them, and
// it runs again when the test ends; a freeze left by a holder that died
// is thawed by the script within a few seconds; when the work ends its
// exit code is the script's and the cgroup is gone.
func TestShareFreezesBackground(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Need(t, testenv.Host, "freezing a cgroup needs root")
	}
	t.Setenv("TMPDIR", t.TempDir()) // slots of this test's own
	ticks := filepath.Join(t.TempDir(), "ticks")
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "background.sh"), "bash", "-c",
		`while [ ! -e "$0.stop" ]; do date +%s%N >"$0.new"; mv "$0.new" "$0"; sleep 0.01; done; exit 3`, ticks)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, ended := make(chan error, 1), make(chan struct{})
	go func() { done <- cmd.Wait(); close(ended) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // ended already if the test passed
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Errorf("the script did not end within 10 s of SIGTERM: %s", out.String())
			cmd.Process.Kill() //nolint:errcheck
		}
	})
	read := func() string { b, _ := os.ReadFile(ticks); return string(b) }
	advances := func(within time.Duration) bool {
		was := read()
		for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if now := read(); now != "" && now != was {
				return true
			}
		}
		return false
	}
	if !advances(5 * time.Second) {
		t.Fatalf("the background work never ran: %s", out.String())
	}
	state, frozen := "", ""
	if m, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/freezer/narrows-background-%d/freezer.state", cmd.Process.Pid)); len(m) == 1 {
		state, frozen = m[0], "FROZEN"
	} else if m, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/narrows-background-%d/cgroup.freeze", cmd.Process.Pid)); len(m) == 1 {
		state, frozen = m[0], "1"
	} else {
		t.Fatalf("no cgroup narrows-background-%d: %s", cmd.Process.Pid, out.String())
	}
	if b, err := exec.Command("chrt", "-p", strconv.Itoa(cmd.Process.Pid+1)).Output(); err == nil && !strings.Contains(string(b), "SCHED_IDLE") {
		t.Logf("chrt -p of the work's first process: %s", b)
	}

	t.Run("frozen while the machine is held", func(t *testing.T) {
		Share(t, Slots)
		if advances(500 * time.Millisecond) {
			t.Errorf("the background work ran while a test held every slot")
		}
	})
	if !advances(2 * time.Second) {
		t.Fatalf("the background work stayed frozen after the test let the machine go")
	}
	t.Run("a share of one freezes nothing", func(t *testing.T) {
		Share(t, 1)
		if !advances(2 * time.Second) {
			t.Errorf("the background work stopped while a test held one slot")
		}
	})
	// A holder that died leaves the cgroup frozen and the alone lock free.
	if err := os.WriteFile(state, []byte(frozen), 0); err != nil {
		t.Fatal(err)
	}
	if !advances(5 * time.Second) {
		t.Fatalf("a freeze nobody holds was not thawed within 5 s")
	}
	if err := os.WriteFile(ticks+".stop", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("the script ended with %v, want the work's exit code 3: %s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the script did not end with its work")
	}
	if _, err := os.Stat(filepath.Dir(state)); !os.IsNotExist(err) {
		t.Errorf("the cgroup %s outlived the work: %v", filepath.Dir(state), err)
	}
}
