//go:build linux

package hostchange

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// persistentTUN makes a TUN device that outlives its descriptor (so that
// a process killed while it changed the device leaves it for the test to
// read), removed at the test's end. The TUN driver keeps one coalescing
// field, rx-frames (its rx_batched), and lets it change.
func persistentTUN(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a TUN device and its coalescing need root")
	}
	name := fmt.Sprintf("nrwc%d", os.Getpid()%100000)
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("/dev/net/tun: %v", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		t.Fatal(err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		t.Fatalf("TUNSETIFF %s: %v", name, err)
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 1); err != nil {
		t.Fatalf("TUNSETPERSIST: %v", err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", name).CombinedOutput(); err != nil {
			t.Errorf("removing %s: %v: %s", name, err, out)
		}
	})
	return name
}

func rxFrames(t *testing.T, dev string) uint32 {
	t.Helper()
	c, err := sysinfo.ReadCoalescing(dev)
	if err != nil {
		t.Fatal(err)
	}
	return c.RxFrames
}

func setRxFrames(t *testing.T, dev string, n uint32) {
	t.Helper()
	c, err := sysinfo.ReadCoalescing(dev)
	if err != nil {
		t.Fatal(err)
	}
	c.RxFrames = n
	if err := sysinfo.WriteCoalescing(dev, c); err != nil {
		t.Fatal(err)
	}
}

// TestLeastCoalescingAndPutBack: a real device's rx-frames at 16 is 1
// for the change and 16 again after; no other field is named; a second
// change while one is held is refused.
func TestLeastCoalescingAndPutBack(t *testing.T) {
	dev := persistentTUN(t)
	setRxFrames(t, dev, 16)
	ch, undo, err := LeastCoalescing(dev)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ch.Before, ch.Set) != "map[rx-frames:16] map[rx-frames:1]" {
		t.Fatalf("changed %v to %v, want rx-frames 16 to 1 only", ch.Before, ch.Set)
	}
	if got := rxFrames(t, dev); got != 1 {
		t.Fatalf("rx-frames %d while changed, want 1", got)
	}
	if _, _, err := LeastCoalescing(dev); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second change while one is held: %v, want ErrBusy", err)
	}
	if _, _, err := SteerRPS(dev, 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("steering while a coalescing change is held: %v, want ErrBusy", err)
	}
	var done result.CoalescingChange
	undo(&done)
	if !done.Restored || done.Error != "" {
		t.Fatalf("put back: %+v", done)
	}
	if got := rxFrames(t, dev); got != 16 {
		t.Fatalf("rx-frames %d after, want 16", got)
	}
}

// TestLeastCoalescingAlready: a device at its least is not touched, and
// the change says so (nothing set).
func TestLeastCoalescingAlready(t *testing.T) {
	dev := persistentTUN(t)
	ch, undo, err := LeastCoalescing(dev)
	if err != nil {
		t.Fatal(err)
	}
	undo(ch)
	if ch.Set != nil || !ch.Restored {
		t.Fatalf("%+v: want nothing set", ch)
	}
}

// TestLeastCoalescingRefuses: a device that keeps no coalescing (the
// loopback), no device, and a name that is not one, each in one line.
func TestLeastCoalescingRefuses(t *testing.T) {
	for dev, want := range map[string]string{
		"lo":         "keeps no interrupt coalescing",
		"":           "no interface to change",
		"../etc":     "no interface to change",
		"nrwc-none0": "reading nrwc-none0's interrupt coalescing",
	} {
		_, _, err := LeastCoalescing(dev)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", dev, err, want)
		}
	}
}

// TestCoalescingGuardianAfterKill: a process that changed a device's
// coalescing is killed (no handler runs); the guardian it started (this
// binary again) puts it back.
func TestCoalescingGuardianAfterKill(t *testing.T) {
	if dev := os.Getenv("NARROWS_HOSTCHANGE_COALESCE"); dev != "" {
		changeAndHang(func() error { _, _, err := LeastCoalescing(dev); return err })
	}
	dev := persistentTUN(t)
	setRxFrames(t, dev, 32)
	cmd := startChanger(t, "TestCoalescingGuardianAfterKill", "NARROWS_HOSTCHANGE_COALESCE="+dev)
	if got := rxFrames(t, dev); got != 1 {
		t.Errorf("rx-frames %d while changed, want 1", got)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for rxFrames(t, dev) != 32 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := rxFrames(t, dev); got != 32 {
		t.Fatalf("rx-frames %d after the changing process was killed, want 32 put back", got)
	}
}

// TestCoalescingChangedMeanwhile: another program sets the device's
// coalescing again while the change is held: the undo says so (the test
// did not run at its least) and still puts back what was there before.
func TestCoalescingChangedMeanwhile(t *testing.T) {
	dev := persistentTUN(t)
	setRxFrames(t, dev, 16)
	_, undo, err := LeastCoalescing(dev)
	if err != nil {
		t.Fatal(err)
	}
	setRxFrames(t, dev, 8) // as tuned or NetworkManager would
	var done result.CoalescingChange
	undo(&done)
	if !strings.Contains(done.Error, "another program changed "+dev+"'s coalescing while the test ran (rx-frames 8 where 1 was set)") || !done.Restored {
		t.Fatalf("%+v", done)
	}
	if got := rxFrames(t, dev); got != 16 {
		t.Fatalf("rx-frames %d after, want 16 put back", got)
	}
}
