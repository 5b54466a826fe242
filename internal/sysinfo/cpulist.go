package sysinfo

import (
	"fmt"
	"strconv"
	"strings"
)

// FormatCPUList writes CPUs as the kernel lists them (ParseCPUList's
// inverse): "1", "0,2-5".
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// ParseCPUList reads a kernel CPU list ("0-3,5": sysfs's online, a
// node's cpulist), in the order given; CPU numbers below MaxCPU.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err != nil || err2 != nil || a < 0 || b < a || b >= MaxCPU {
			return nil, fmt.Errorf("CPU list %q: not a list of CPUs", s)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// MaxCPU bounds the CPU numbers read (Linux's NR_CPUS is at most 8192).
const MaxCPU = 8192
