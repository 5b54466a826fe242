package hostchange

import (
	"fmt"
	"strings"
)

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

// devName says whether dev can name an interface whose settings a change
// writes: a kernel interface name (at most 15 bytes), no path in it.
func devName(dev string) bool {
	return dev != "" && len(dev) <= 15 && !strings.ContainsAny(dev, "/ \x00") && dev != "." && dev != ".."
}
