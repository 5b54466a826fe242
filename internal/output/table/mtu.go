package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

// mtuSummary writes `narrows net mtu`: each end's interface, then what
// each direction carries.
func mtuSummary(b *strings.Builder, m *result.MTU) {
	iface := func(i result.MTUInterface) string {
		if i.MTU == 0 {
			return "not known"
		}
		if i.Name == "" {
			return fmt.Sprintf("MTU %d", i.MTU)
		}
		return fmt.Sprintf("%s, MTU %d", i.Name, i.MTU)
	}
	fmt.Fprintf(b, "interfaces: here %s; agent %s\n", iface(m.Here), iface(m.Agent))
	fmt.Fprintf(b, "%-6s %-10s %10s %12s %14s %8s\n", "dir", "full size", "path MTU", "kernel PMTU", "edge", "probes")
	for _, d := range m.Directions {
		full := "passed"
		if !d.FullSize {
			full = "VANISHED"
		}
		path, kernel, edge := "-", "-", "-"
		if d.PathMTU > 0 {
			path = fmt.Sprint(d.PathMTU)
		}
		if d.KernelPMTU > 0 {
			kernel = fmt.Sprint(d.KernelPMTU)
		}
		if d.SmallestFailed > 0 {
			edge = fmt.Sprintf("%d / %d", d.LargestPassed, d.SmallestFailed)
		}
		fmt.Fprintf(b, "%-6s %-10s %10s %12s %14s %8d\n", d.Direction, full, path, kernel, edge, d.Probes)
	}
	if m.SearchUnavailable != "" {
		fmt.Fprintf(b, "search: %s\n", m.SearchUnavailable)
	}
}
