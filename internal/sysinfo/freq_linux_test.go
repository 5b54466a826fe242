//go:build linux

package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCoreMHz reads cpufreq's current frequency where there is one, else
// the processor's own line of /proc/cpuinfo, and this machine's.
func TestCoreMHz(t *testing.T) {
	if mhz := coreMHz(0); mhz != 0 && (mhz < 100 || mhz > 10000) {
		t.Errorf("this machine's CPU 0 at %g MHz", mhz)
	}
	root := t.TempDir()
	oldSys, oldInfo := sysDir, cpuinfoPath
	sysDir, cpuinfoPath = root, filepath.Join(root, "cpuinfo")
	t.Cleanup(func() { sysDir, cpuinfoPath = oldSys, oldInfo })
	info := "processor\t: 0\nmodel name\t: X\ncpu MHz\t\t: 2596.120\n\nprocessor\t: 1\ncpu MHz\t\t: 3400.5\n\nprocessor\t: 2\n"
	if err := os.WriteFile(cpuinfoPath, []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	freq := filepath.Join(root, "devices/system/cpu/cpu3/cpufreq")
	if err := os.MkdirAll(freq, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(freq, "scaling_cur_freq"), []byte("1200000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for cpu, want := range map[int]float64{0: 2596.12, 1: 3400.5, 2: 0, 3: 1200, 7: 0} {
		if got := coreMHz(cpu); got != want {
			t.Errorf("CPU %d: %g MHz, want %g", cpu, got, want)
		}
	}
}
