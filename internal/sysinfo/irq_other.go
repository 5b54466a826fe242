//go:build !linux

package sysinfo

import "github.com/narrows/narrows/internal/result"

// nicInterrupts names no NIC's interrupts: Windows counts them per
// processor, not per device, and the others are not read.
func nicInterrupts(string) func(int, float64) []result.CoreIRQ {
	return func(int, float64) []result.CoreIRQ { return nil }
}
