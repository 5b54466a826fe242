package sysinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/testenv"
)

// A hybrid host (cgroup v1 controllers, v2's unified hierarchy beside
// them) and a container that sees its own cgroup as its root.
const mountinfoHybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
`

const mountinfoContainer = `1402 1393 0:30 /kubepods/pod1/c1 /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw
`

func TestCgroupMountsAndPaths(t *testing.T) {
	v1, v2 := cgroupMounts([]byte(mountinfoHybrid))
	if v1 == nil || v1.point != "/sys/fs/cgroup/cpu,cpuacct" || v1.root != "/" {
		t.Errorf("v1 cpu hierarchy %+v, want / at /sys/fs/cgroup/cpu,cpuacct (not cpuacct alone)", v1)
	}
	if v2 == nil || v2.point != "/sys/fs/cgroup/unified" {
		t.Errorf("v2 hierarchy %+v", v2)
	}
	_, c := cgroupMounts([]byte(mountinfoContainer))
	if c == nil || c.root != "/kubepods/pod1/c1" || c.point != "/sys/fs/cgroup" {
		t.Errorf("a container's v2 mount %+v", c)
	}
	p1, p2 := cgroupPaths([]byte("12:cpuacct:/a\n4:cpu,cpuacct:/user.slice/x\n1:name=systemd:/y\n0::/user.slice/x\n"))
	if p1 != "/user.slice/x" || p2 != "/user.slice/x" {
		t.Errorf("paths %q %q", p1, p2)
	}
	if got := unescapeMount(`/mnt/a\040b`); got != "/mnt/a b" {
		t.Errorf("unescape %q", got)
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The tightest limit on the way up wins, with its own level's counters:
// a pod's 0.5 core above a container's 2.
func TestWalkCgroupsTightest(t *testing.T) {
	root := t.TempDir()
	pod, ctr := filepath.Join(root, "kubepods", "pod1"), filepath.Join(root, "kubepods", "pod1", "c1")
	write(t, pod, "cpu.max", "50000 100000\n")
	write(t, pod, "cpu.stat", "usage_usec 1\nnr_periods 200\nnr_throttled 150\nthrottled_usec 9\n")
	write(t, ctr, "cpu.max", "200000 100000\n")
	write(t, ctr, "cpu.stat", "nr_periods 200\nnr_throttled 0\n")
	write(t, root, "cpu.max", "max 100000\n")
	got := walkCgroups(&cgroupMount{root: "/", point: root}, "/kubepods/pod1/c1", v2Level)
	if got.Cores != 0.5 || got.Periods != 200 || got.Throttled != 150 {
		t.Fatalf("limit %+v, want the pod's 0.5 core, 150 of 200 periods", got)
	}
	if got := walkCgroups(&cgroupMount{root: "/kubepods/pod1", point: root}, "/kubepods/pod10/c1", v2Level); got.Cores != 0 {
		t.Fatalf("a cgroup beside the mount's root read as under it: %+v", got)
	}
	if got := walkCgroups(&cgroupMount{root: "/kubepods", point: filepath.Join(root, "kubepods")}, "/kubepods/pod1/c1", v2Level); got.Cores != 0.5 {
		t.Fatalf("a container whose mount's root is its pod's parent: %+v", got)
	}
	v1 := filepath.Join(t.TempDir(), "svc")
	write(t, v1, "cpu.cfs_quota_us", "-1\n")
	write(t, v1, "cpu.cfs_period_us", "100000\n")
	if got := v1Level(v1); got.Cores != 0 {
		t.Fatalf("v1 quota -1 read as a limit: %+v", got)
	}
	write(t, v1, "cpu.cfs_quota_us", "25000\n")
	write(t, v1, "cpu.stat", "nr_periods 40\nnr_throttled 30\nthrottled_time 5\n")
	if got := v1Level(v1); got.Cores != 0.25 || got.Throttled != 30 {
		t.Fatalf("v1 limit %+v", got)
	}
	a, b := CPULimit{Cores: 0.25, Periods: 40, Throttled: 30}, CPULimit{Cores: 0.25, Periods: 140, Throttled: 120}
	if s := b.ThrottledShare(a); s != 0.9 {
		t.Fatalf("throttled share %v, want 0.9", s)
	}
	if s := b.ThrottledShare(CPULimit{Cores: 1}); s != 0 {
		t.Fatalf("a limit changed between readings gave a share: %v", s)
	}
}

// TestReadCPULimitInACgroup: this test's binary, run again inside a real
// cgroup with a quota of a fifth of a core, spins for half a second and
// reads its own limit: 0.2 of a core, throttled in most of its periods.
func TestReadCPULimitInACgroup(t *testing.T) {
	if os.Getenv("NARROWS_CPULIMIT_CHILD") == "1" {
		a, err := ReadCPULimit()
		if err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); {
		}
		b, _ := ReadCPULimit()
		t.Logf("RESULT cores %g throttled %.2f", b.Cores, b.ThrottledShare(a))
		if b.Cores != 0.2 || b.ThrottledShare(a) < 0.5 {
			t.Fatalf("in a 0.2-core cgroup: %+v then %+v", a, b)
		}
		return
	}
	dir, file, limit := "/sys/fs/cgroup/cpu", "cpu.cfs_quota_us", "20000"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir, file, limit = "/sys/fs/cgroup", "cpu.max", "20000 100000"
		os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu"), 0) //nolint:errcheck // may be on already
	}
	cg := filepath.Join(dir, "narrows-cpulimit-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		testenv.Need(t, testenv.Host, "a cgroup with a CPU quota (root, the cpu controller): %v", err)
	}
	defer os.Remove(cg)
	if err := os.WriteFile(filepath.Join(cg, file), []byte(limit), 0); err != nil {
		t.Fatalf("%s %s: %v", file, limit, err)
	}
	// The child moves itself in before it runs the test: a shell that
	// writes its own pid, then execs the binary.
	cmd := exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg, os.Args[0], "-test.run", "^TestReadCPULimitInACgroup$", "-test.v")
	cmd.Env = append(os.Environ(), "NARROWS_CPULIMIT_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the child in %s: %v", cg, err)
	}
}
