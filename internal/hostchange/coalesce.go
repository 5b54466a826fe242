package hostchange

import "github.com/narrows/narrows/internal/result"

// LeastCoalescing turns dev's receive interrupt coalescing to its least
// for one test: rx-usecs 0, rx-frames 1 and adaptive-rx off, each field
// its driver keeps that is not there already (an interrupt for each
// packet as it arrives). It returns what it changed and the undo that
// puts it back (filling in Restored, or Error with what failed); with
// every field at its least already it changes nothing, and the change
// says so (no Set). Linux, as root; End is left to the caller.
func LeastCoalescing(dev string) (*result.CoalescingChange, func(*result.CoalescingChange), error) {
	return holding(func() (*result.CoalescingChange, func(*result.CoalescingChange), error) { return leastCoalescing(dev) })
}
