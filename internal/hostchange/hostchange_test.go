package hostchange

import (
	"slices"
	"testing"

	"github.com/narrows/narrows/internal/sysinfo"
)

func TestCPUListsAndMasks(t *testing.T) {
	for _, c := range []struct {
		list string
		cpus []int
		mask string
	}{
		{"1", []int{1}, "00000002"},
		{"0,2-5", []int{0, 2, 3, 4, 5}, "0000003d"},
		{"0-1,33", []int{0, 1, 33}, "00000002,00000003"},
		{"31-32", []int{31, 32}, "00000001,80000000"},
	} {
		got, err := sysinfo.ParseCPUList(c.list)
		if err != nil || !slices.Equal(got, c.cpus) {
			t.Errorf("sysinfo.ParseCPUList(%q) = %v, %v; want %v", c.list, got, err, c.cpus)
		}
		if l := sysinfo.FormatCPUList(c.cpus); l != c.list {
			t.Errorf("sysinfo.FormatCPUList(%v) = %q, want %q", c.cpus, l, c.list)
		}
		if m := cpuMask(c.cpus); m != c.mask {
			t.Errorf("cpuMask(%v) = %q, want %q", c.cpus, m, c.mask)
		}
	}
	for _, bad := range []string{"x", "3-1", "-1", "0-9000", "1,,2"} {
		if _, err := sysinfo.ParseCPUList(bad); err == nil {
			t.Errorf("sysinfo.ParseCPUList(%q) took it", bad)
		}
	}
}
