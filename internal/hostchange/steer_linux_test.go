//go:build linux

package hostchange

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeSys lays out a sysfs tree with dev's receive queues (each rps_cpus
// holding "0") and the CPUs online, and points sysRoot at it.
func fakeSys(t *testing.T, dev string, queues int, online string) []string {
	t.Helper()
	root := t.TempDir()
	old := sysRoot
	sysRoot = root
	t.Cleanup(func() { sysRoot = old })
	var files []string
	for q := range queues {
		d := filepath.Join(root, "class/net", dev, "queues", "rx-"+string(rune('0'+q)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(d, "rps_cpus")
		if err := os.WriteFile(f, []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	cpu := filepath.Join(root, "devices/system/cpu")
	if err := os.MkdirAll(cpu, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cpu, "online"), []byte(online+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return files
}

func read(t *testing.T, f string) string {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestSteerAndPutBack(t *testing.T) {
	files := fakeSys(t, "eth0", 2, "0-3")
	st, undo, err := SteerRPS("eth0", 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUs != "0-1,3" || st.Mask != "0000000b" || st.Queues != 2 || st.Before != "0" || st.OffCore != 2 {
		t.Errorf("steering %+v", *st)
	}
	for _, f := range files {
		if got := read(t, f); got != "0000000b" {
			t.Errorf("%s = %q while steered", f, got)
		}
	}
	if _, _, err := SteerRPS("eth0", 1); !errors.Is(err, ErrBusy) {
		t.Errorf("a second steering while one is held: %v", err)
	}
	undo(st)
	undo(st) // once is enough; twice changes nothing
	if !st.Restored || st.Error != "" {
		t.Errorf("after the undo: %+v", *st)
	}
	for _, f := range files {
		if got := read(t, f); got != "0" {
			t.Errorf("%s = %q after the undo", f, got)
		}
	}
	// Released: the next run may steer.
	st, undo, err = SteerRPS("eth0", 0)
	if err != nil {
		t.Fatal(err)
	}
	undo(st)
}

// TestSteerMovedMeanwhile: a program that writes rps_cpus while the
// test runs (irqbalance, a tuning daemon) is said, and the undo still
// puts back what was there before the test.
func TestSteerMovedMeanwhile(t *testing.T) {
	files := fakeSys(t, "eth0", 2, "0-1")
	st, undo, err := SteerRPS("eth0", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel reads a mask back padded and in 32-bit words: the same
	// mask so written is not a change.
	if err := os.WriteFile(files[0], []byte("00000000,00000002\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[1], []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	undo(st)
	if !st.Restored || !strings.Contains(st.Error, "another program changed eth0's rps_cpus while the test ran (1, not 00000002)") {
		t.Errorf("after the undo: %+v", *st)
	}
	for _, f := range files {
		if got := read(t, f); got != "0" {
			t.Errorf("%s = %q after the undo", f, got)
		}
	}
}

func TestSameMask(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{{"0000000b", "b", true}, {"00000000,0000000B\n", "0000000b", true}, {"0", "00000000", true},
		{"1", "2", false}, {"00000001,00000000", "1", false}} {
		if got := sameMask(c.a, c.b); got != c.same {
			t.Errorf("sameMask(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func TestSteerRefuses(t *testing.T) {
	fakeSys(t, "eth0", 1, "0")
	for _, c := range []struct {
		dev  string
		off  int
		want string
	}{
		{"eth0", 0, "one CPU online"},
		{"eth0", 5, "not online"},
		{"eth1", 0, "no receive steering"},
		{"../x", 0, "no interface"},
		{"", 0, "no interface"},
	} {
		if _, _, err := SteerRPS(c.dev, c.off); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SteerRPS(%q, %d): %v, want %q", c.dev, c.off, err, c.want)
		}
	}
}

// TestGuardianPutsBackAfterKill: a process that steered is killed (no
// handler runs); the guardian it started writes the setting back.
func TestGuardianPutsBackAfterKill(t *testing.T) {
	if dir := os.Getenv("NARROWS_HOSTCHANGE_HELPER"); dir != "" {
		sysRoot = dir
		changeAndHang(func() error { _, _, err := SteerRPS("eth0", 1); return err })
	}
	files := fakeSys(t, "eth0", 3, "0-1")
	cmd := startChanger(t, "TestGuardianPutsBackAfterKill", "NARROWS_HOSTCHANGE_HELPER="+sysRoot)
	for _, f := range files {
		if got := read(t, f); got != "00000001" {
			t.Errorf("%s = %q while steered", f, got)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, f := range files {
		for read(t, f) != "0" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := read(t, f); got != "0" {
			t.Errorf("%s = %q after the steering process was killed", f, got)
		}
	}
}

// changeAndHang is a changer's life (startChanger): it makes the change,
// says "changed" (or the error) and waits to be killed.
func changeAndHang(change func() error) {
	if err := change(); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("changed\n")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// startChanger runs this test binary's test name again with env, as a
// process that makes its change and hangs (changeAndHang), and returns
// once it has made it.
func startChanger(t *testing.T, name, env string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 200)
	n, _ := out.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "changed") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the changing process said %q", buf[:n])
	}
	return cmd
}
