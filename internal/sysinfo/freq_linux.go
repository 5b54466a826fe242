//go:build linux

package sysinfo

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cpuinfoPath is /proc/cpuinfo: a test points it at a file of its own.
var cpuinfoPath = "/proc/cpuinfo"

// coreMHz is cpu's clock as the kernel reports it now: cpufreq's current
// frequency where the OS scales it, else /proc/cpuinfo's "cpu MHz" of
// that processor (a VM's is the host's nominal clock); 0 where neither
// says.
func coreMHz(cpu int) float64 {
	if v := readTrim(filepath.Join(sysDir, "devices/system/cpu", "cpu"+strconv.Itoa(cpu), "cpufreq/scaling_cur_freq")); v != "" {
		if khz, err := strconv.ParseFloat(v, 64); err == nil && khz > 0 && khz < 1e8 {
			return khz / 1000
		}
	}
	b, err := os.ReadFile(cpuinfoPath)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	this := false
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			this = err == nil && n == cpu
		case "cpu MHz":
			if this {
				if mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && mhz > 0 && mhz < 1e5 {
					return mhz
				}
				return 0
			}
		}
	}
	return 0
}
