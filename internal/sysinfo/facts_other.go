//go:build !linux && !windows

package sysinfo

import "github.com/narrows/narrows/internal/result"

// hostFacts: on other systems narrows gives what Go gives (OS, cores,
// the interfaces and their MTU) and says what it does not read.
func hostFacts(f *result.Facts) {
	f.Missing = append(f.Missing, "kernel, cpu model, memory, tcp settings (not read on "+f.OS+")")
}

func nicFacts(n *result.NIC) []string {
	return []string{n.Name + ": driver, speed, offloads, interrupt coalescing (not read on this OS)"}
}
