//go:build linux

package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// cgroupSeq numbers the cgroups of this process.
var cgroupSeq atomic.Int32

// newCgroup makes a cgroup of the scenario's: under cgroup v1's hierarchy
// of controller (/sys/fs/cgroup/CONTROLLER), or on a cgroup v2 host under
// its root with the v2 controllers v2ctl turned on for it ("+io +memory"). At the scenario's end whatever is left in it goes back to the
// root, then the group. It returns the group's directory and whether it
// is v2's.
func (c *Case) newCgroup(name, controller, v2ctl string) (dir string, v2 bool) {
	c.T.Helper()
	root := filepath.Join("/sys/fs/cgroup", controller)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // v2 only
		root, v2 = "/sys/fs/cgroup", true
		os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte(v2ctl), 0) //nolint:errcheck // may be on already
	}
	dir = filepath.Join(root, fmt.Sprintf("narrows-%s-%d-%d", name, os.Getpid(), cgroupSeq.Add(1))) // scenarios run side by side
	if err := os.Mkdir(dir, 0o755); err != nil {
		c.T.Fatalf("a cgroup for %s (%s): %v", name, controller, err)
	}
	c.T.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, p := range strings.Fields(string(b)) {
				os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(p), 0) //nolint:errcheck
			}
		}
		os.Remove(dir) //nolint:errcheck
	})
	return dir, v2
}

// setCgroup writes one of a cgroup's settings.
func (c *Case) setCgroup(dir, file, value string) {
	c.T.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		c.T.Fatalf("%s %q: %v", file, value, err)
	}
}
