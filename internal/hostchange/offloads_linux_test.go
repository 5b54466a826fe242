//go:build linux

package hostchange

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// persistentVeth makes a veth pair in this namespace (it carries no
// traffic: nothing is up on it), removed at the test's end, with the
// offloads a try changes off on its first end, which it returns. A veth
// lets tso, gso and gro change, as a NIC's driver does.
func persistentVeth(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a veth pair and its offloads need root")
	}
	name := fmt.Sprintf("nrwo%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "link", "add", name, "type", "veth", "peer", "name", name+"p").CombinedOutput(); err != nil {
		t.Fatalf("ip link add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", name).CombinedOutput(); err != nil {
			t.Errorf("removing %s: %v: %s", name, err, out)
		}
	})
	for _, o := range []string{"tso", "gso", "gro"} {
		setOffload(t, name, o, false)
	}
	return name
}

func offloadOn(t *testing.T, dev, name string) bool {
	t.Helper()
	on, err := sysinfo.ReadOffload(dev, name)
	if err != nil {
		t.Fatal(err)
	}
	return on
}

func setOffload(t *testing.T, dev, name string, on bool) {
	t.Helper()
	if err := sysinfo.WriteOffload(dev, name, on); err != nil {
		t.Fatalf("%s %s %v: %v", dev, name, on, err)
	}
	if got := offloadOn(t, dev, name); got != on {
		t.Fatalf("%s %s is %v after setting it %v", dev, name, got, on)
	}
}

// TestOffloadsOnAndOff: a real veth's tso and gso off are on for a
// sender's try, and off again after; gro, which a sender does not use,
// is not touched; a second change while one is held is refused.
func TestOffloadsOnAndOff(t *testing.T) {
	dev := persistentVeth(t)
	ch, undo, err := OffloadsOn(dev, result.RoleSending)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ch.On, []string{"tso", "gso"}) || ch.Interface != dev || ch.Role != result.RoleSending {
		t.Fatalf("%+v: want tso and gso turned on at %s", ch, dev)
	}
	if !offloadOn(t, dev, "tso") || !offloadOn(t, dev, "gso") || offloadOn(t, dev, "gro") {
		t.Fatal("while changed: want tso and gso on, gro as it was (off)")
	}
	if _, _, err := OffloadsOn(dev, result.RoleReceiving); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second change while one is held: %v, want ErrBusy", err)
	}
	var done result.OffloadChange
	undo(&done)
	if !done.Restored || done.Error != "" {
		t.Fatalf("turned off again: %+v", done)
	}
	for _, o := range []string{"tso", "gso", "gro"} {
		if offloadOn(t, dev, o) {
			t.Errorf("%s on after the try, want off as before", o)
		}
	}
}

// TestOffloadsAlreadyOn: a receiver whose gro is on is not touched, and
// the change says so (nothing turned on).
func TestOffloadsAlreadyOn(t *testing.T) {
	dev := persistentVeth(t)
	setOffload(t, dev, "gro", true)
	ch, undo, err := OffloadsOn(dev, result.RoleReceiving)
	if err != nil {
		t.Fatal(err)
	}
	undo(ch)
	if len(ch.On) != 0 || !ch.Restored || !offloadOn(t, dev, "gro") {
		t.Fatalf("%+v, gro on %v: want nothing turned on, gro still on", ch, offloadOn(t, dev, "gro"))
	}
}

// TestOffloadsRefuses: no device, a name that is not one, one that does
// not exist, a part a stream does not have; and the guardian's undo takes
// no offload a try does not change.
func TestOffloadsRefuses(t *testing.T) {
	for _, c := range []struct{ dev, role, want string }{
		{"", result.RoleSending, "no interface to change"},
		{"../etc", result.RoleSending, "no interface to change"},
		{"nrwo-none0", result.RoleReceiving, "reading nrwo-none0's gro"},
		{"lo", "sideways", `no part "sideways"`},
	} {
		_, _, err := OffloadsOn(c.dev, c.role)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %s: %v, want %q", c.dev, c.role, err, c.want)
		}
	}
	if err := undoFrom([]string{"offloads", "lo", "rx-checksum"}); err == nil || !strings.Contains(err.Error(), "not an offload a try changes") {
		t.Errorf("the guardian's undo of rx-checksum: %v", err)
	}
}

// TestOffloadsGuardianAfterKill: a process that turned a device's gro on
// is killed (no handler runs); the guardian it started (this binary
// again) turns it off.
func TestOffloadsGuardianAfterKill(t *testing.T) {
	if dev := os.Getenv("NARROWS_HOSTCHANGE_OFFLOADS"); dev != "" {
		changeAndHang(func() error { _, _, err := OffloadsOn(dev, result.RoleReceiving); return err })
	}
	dev := persistentVeth(t)
	cmd := startChanger(t, "TestOffloadsGuardianAfterKill", "NARROWS_HOSTCHANGE_OFFLOADS="+dev)
	if !offloadOn(t, dev, "gro") {
		t.Error("gro off while changed, want on")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for offloadOn(t, dev, "gro") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if offloadOn(t, dev, "gro") {
		t.Fatal("gro on after the changing process was killed, want it off as before")
	}
}

// TestOffloadsChangedMeanwhile: another program turns gro off while the
// change is held: the undo says so (the test did not run with it on).
func TestOffloadsChangedMeanwhile(t *testing.T) {
	dev := persistentVeth(t)
	_, undo, err := OffloadsOn(dev, result.RoleReceiving)
	if err != nil {
		t.Fatal(err)
	}
	setOffload(t, dev, "gro", false) // as NetworkManager or a driver's reset would
	var done result.OffloadChange
	undo(&done)
	if !strings.Contains(done.Error, "another program turned "+dev+"'s gro off while the test ran") || !done.Restored {
		t.Fatalf("%+v", done)
	}
}
