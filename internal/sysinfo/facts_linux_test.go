//go:build linux

package sysinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/result"
)

func TestFactsLoopback(t *testing.T) {
	t0 := time.Now()
	ReadFacts("127.0.0.1")
	// The bound is ReadFacts' own timer; the slack is for a loaded machine.
	if took := time.Since(t0); took > factsBudget+100*time.Millisecond {
		t.Errorf("ReadFacts took %s, past its budget %s", took, factsBudget)
	}
	f := readFacts("127.0.0.1") // the figures, whatever the machine's load
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	if want := unix.ByteSliceToString(u.Release[:]); f.Kernel != want {
		t.Errorf("kernel %q, uname says %q", f.Kernel, want)
	}
	if f.OS != "linux" || f.Cores != runtime.NumCPU() || f.MemoryBytes <= 0 || f.CPU == "" {
		t.Errorf("host facts: %+v", f)
	}
	if f.TCP == nil || f.TCP.CongestionControl == "" || f.TCP.RmemMax <= 0 {
		t.Errorf("tcp: %+v", f.TCP)
	}
	if len(f.Interfaces) != 1 || f.Interfaces[0].Name != "lo" || f.Interfaces[0].MTU != 65536 {
		t.Fatalf("the route to 127.0.0.1 leaves by lo, MTU 65536: %+v", f.Interfaces)
	}
	// lo has no device and no coalescing: said, not invented.
	if f.Interfaces[0].Coalescing != nil || len(f.Missing) == 0 {
		t.Errorf("lo: coalescing %v, missing %q", f.Interfaces[0].Coalescing, f.Missing)
	}
}

// TestFactsDevice reads an interface that has a device driver, if this
// machine has one (a VM's virtio_net, a host's ixgbe).
func TestFactsDevice(t *testing.T) {
	links, _ := filepath.Glob("/sys/class/net/*/device/driver")
	if len(links) == 0 {
		t.Skip("no network interface with a device driver here")
	}
	name := filepath.Base(filepath.Dir(filepath.Dir(links[0])))
	l, _ := os.Readlink(links[0])
	f := readFacts("")
	for _, n := range f.Interfaces {
		if n.Name != name {
			continue
		}
		if n.Driver != filepath.Base(l) || n.MTU <= 0 {
			t.Errorf("%s: driver %q (sysfs: %q), MTU %d", name, n.Driver, filepath.Base(l), n.MTU)
		}
		t.Logf("%s: %s %s firmware %q MTU %d, %d Mbit/s, offloads %v, coalescing %v", n.Name, n.Driver, n.DriverVersion, n.Firmware, n.MTU, n.SpeedMbps, n.Offloads, n.Coalescing)
		return
	}
	t.Logf("%s is not up: not among %+v", name, f.Interfaces)
}

// TestFactsVeth makes a veth pair in a network namespace of its own (one
// locked thread's, gone with the thread) and reads the route to its peer:
// a virtual interface has no device link, but ethtool names its driver.
func TestFactsVeth(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network namespace needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command")
	}
	type answer struct {
		f   *result.Facts
		err error
	}
	done := make(chan answer, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, and its namespace, end with this goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- answer{err: err}
			return
		}
		for _, args := range [][]string{
			{"link", "add", "nfacts0", "mtu", "9000", "type", "veth", "peer", "name", "nfacts1"},
			{"addr", "add", "198.51.100.1/24", "dev", "nfacts0"},
			{"link", "set", "nfacts0", "up"},
			{"link", "set", "nfacts1", "up"},
		} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				done <- answer{err: &os.PathError{Op: "ip " + args[0], Path: string(out), Err: err}}
				return
			}
		}
		done <- answer{f: readFacts("198.51.100.2")} // on this thread: in the namespace
	}()
	a := <-done
	if a.err != nil {
		t.Skipf("cannot make a veth in a namespace: %v", a.err)
	}
	if len(a.f.Interfaces) != 1 {
		t.Fatalf("interfaces %+v, missing %q", a.f.Interfaces, a.f.Missing)
	}
	n := a.f.Interfaces[0]
	if n.Name != "nfacts0" || n.Driver != "veth" || n.DriverVersion == "" || n.MTU != 9000 {
		t.Errorf("veth: %+v", n)
	}
	t.Logf("%+v; missing %q", n, a.f.Missing)
}
