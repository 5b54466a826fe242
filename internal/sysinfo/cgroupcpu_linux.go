package sysinfo

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupRoots reads /proc/self/mountinfo for where the CPU controller's
// hierarchy is mounted: cgroup v1's "cpu" hierarchy, and cgroup v2's
// unified one. Each maps the hierarchy's root as mounted (a container sees
// its own cgroup as "/") to the mount point.
type cgroupMount struct{ root, point string }

func cgroupMounts(mountinfo []byte) (v1, v2 *cgroupMount) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// 36 25 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,... shared:12 - cgroup cgroup rw,cpu,cpuacct
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := &cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			if v2 == nil {
				v2 = m
			}
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if o == "cpu" && v1 == nil {
					v1 = m
				}
			}
		}
	}
	return v1, v2
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupPaths reads /proc/self/cgroup: the v1 "cpu" hierarchy's path and
// the v2 one's.
func cgroupPaths(cgroup []byte) (v1, v2 string) {
	for _, line := range strings.Split(string(cgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpu" {
				v1 = parts[2]
			}
		}
	}
	return v1, v2
}

func readCPULimit() (CPULimit, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return CPULimit{}, err
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return CPULimit{}, err
	}
	m1, m2 := cgroupMounts(mi)
	p1, p2 := cgroupPaths(cg)
	var best CPULimit
	if m1 != nil && p1 != "" {
		best = tightest(best, walkCgroups(m1, p1, v1Level))
	}
	if m2 != nil && p2 != "" {
		best = tightest(best, walkCgroups(m2, p2, v2Level))
	}
	return best, nil
}

func tightest(a, b CPULimit) CPULimit {
	if a.Cores == 0 || (b.Cores > 0 && b.Cores < a.Cores) {
		return b
	}
	return a
}

// walkCgroups reads each level from the process's cgroup up to the
// mount's root and keeps the tightest limit.
func walkCgroups(m *cgroupMount, path string, level func(dir string) CPULimit) CPULimit {
	rel, ok := strings.CutPrefix(path, strings.TrimSuffix(m.root, "/"))
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return CPULimit{} // the process's cgroup is outside what is mounted here
	}
	dir := filepath.Join(m.point, rel)
	var best CPULimit
	for {
		best = tightest(best, level(dir))
		if dir == m.point || !strings.HasPrefix(dir, m.point) {
			return best
		}
		dir = filepath.Dir(dir)
	}
}

func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// CgroupThrottled reads the enforcement periods and the throttled ones
// from the cpu.stat of the cgroup at dir (v1 and v2 alike): 0, 0 where
// it cannot be read.
func CgroupThrottled(dir string) (periods, throttled int64) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "nr_periods":
			periods = n
		case "nr_throttled":
			throttled = n
		}
	}
	return periods, throttled
}

// v1Level reads cgroup v1's cpu.cfs_quota_us (-1: none) and
// cpu.cfs_period_us.
func v1Level(dir string) CPULimit {
	quota, ok1 := readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
	period, ok2 := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
	if !ok1 || !ok2 || quota <= 0 || period <= 0 {
		return CPULimit{}
	}
	p, t := CgroupThrottled(dir)
	return CPULimit{Cores: float64(quota) / float64(period), Periods: p, Throttled: t}
}

// v2Level reads cgroup v2's cpu.max: "QUOTA PERIOD", or "max PERIOD" for
// none.
func v2Level(dir string) CPULimit {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return CPULimit{}
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] == "max" {
		return CPULimit{}
	}
	quota, err1 := strconv.ParseInt(f[0], 10, 64)
	period, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return CPULimit{}
	}
	p, t := CgroupThrottled(dir)
	return CPULimit{Cores: float64(quota) / float64(period), Periods: p, Throttled: t}
}
