//go:build linux

package sysinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

// sysDir is sysfs: a test points it at a tree of its own.
var sysDir = "/sys"

// coreNUMA is where cpu and dev's device sit, on a machine of more than
// one NUMA node; nil on one node, or where the core's node is not told.
func coreNUMA(cpu int, dev string) *result.CoreNUMA {
	b, err := os.ReadFile(filepath.Join(sysDir, "devices/system/node/online"))
	if err != nil {
		return nil
	}
	list, _ := ParseCPUList(string(b)) // node numbers, listed as CPUs are
	nodes := len(list)
	if nodes < 2 {
		return nil
	}
	m, _ := filepath.Glob(filepath.Join(sysDir, "devices/system/cpu", "cpu"+strconv.Itoa(cpu), "node[0-9]*"))
	if len(m) != 1 {
		return nil
	}
	core, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m[0]), "node"))
	if err != nil {
		return nil
	}
	return &result.CoreNUMA{Nodes: nodes, CoreNode: core, NICNode: nicNode(dev)}
}

// nicNode is dev's device's NUMA node: the device's own numa_node, else
// its parent's (a virtio NIC's is its PCI device's); -1 where neither says.
func nicNode(dev string) int {
	if dev == "" || strings.ContainsAny(dev, "/\x00") {
		return -1
	}
	d, err := filepath.EvalSymlinks(filepath.Join(sysDir, "class/net", dev, "device"))
	if err != nil {
		return -1 // a virtual interface has no device
	}
	for _, f := range []string{filepath.Join(d, "numa_node"), filepath.Join(filepath.Dir(d), "numa_node")} {
		if b, err := os.ReadFile(f); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 {
				return n
			}
		}
	}
	return -1
}
