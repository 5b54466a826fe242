//go:build linux

package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCoreNUMA reads a two-node machine's sysfs, laid out as a real one
// is (a virtio NIC's node on its PCI parent), and a one-node machine's.
func TestCoreNUMA(t *testing.T) {
	root := t.TempDir()
	old := sysDir
	sysDir = root
	t.Cleanup(func() { sysDir = old })
	write := func(rel, v string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(rel string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("devices/system/node/online", "0-1")
	mkdir("devices/system/cpu/cpu0/node0")
	mkdir("devices/system/cpu/cpu9/node1")
	write("class/net/eth0/device/numa_node", "1")    // a PCI NIC's own
	write("class/net/eth1/device/../numa_node", "0") // resolved below: the parent's
	mkdir("class/net/eth1/device")
	write("class/net/eth2/device/numa_node", "-1") // a device that does not say
	for _, c := range []struct {
		cpu       int
		dev       string
		core, nic int
	}{{0, "eth0", 0, 1}, {9, "eth0", 1, 1}, {0, "eth1", 0, 0}, {0, "eth2", 0, -1}, {0, "veth0", 0, -1}} {
		n := coreNUMA(c.cpu, c.dev)
		if n == nil || n.Nodes != 2 || n.CoreNode != c.core || n.NICNode != c.nic {
			t.Errorf("cpu %d, %s: %+v; want core node %d, NIC node %d of 2", c.cpu, c.dev, n, c.core, c.nic)
		}
	}
	if n := coreNUMA(5, "eth0"); n != nil {
		t.Errorf("a CPU sysfs does not place: %+v", n)
	}
	write("devices/system/node/online", "0")
	if n := coreNUMA(0, "eth0"); n != nil {
		t.Errorf("one node: %+v, want nothing to say", n)
	}
}
