package hostchange

import (
	"fmt"
	"strconv"
	"strings"
)

// cpuList writes CPUs as the kernel lists them: "1", "0,2-5".
func cpuList(cpus []int) string {
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

// parseCPUList reads a kernel CPU list ("0-3,5"), sorted as given; at
// most maxCPU.
func parseCPUList(s string) ([]int, error) {
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
		if err != nil || err2 != nil || a < 0 || b < a || b >= maxCPU {
			return nil, fmt.Errorf("CPU list %q: not a list of CPUs", s)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// maxCPU bounds the CPU numbers read (Linux's NR_CPUS is at most 8192).
const maxCPU = 8192

// cpuMask writes CPUs as a bitmap file takes them (rps_cpus): 32-bit
// hexadecimal words, the highest first, separated by commas.
func cpuMask(cpus []int) string {
	top := 0
	for _, c := range cpus {
		top = max(top, c)
	}
	words := make([]uint32, top/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ",")
}
