package hostchange

import "github.com/narrows/narrows/internal/result"

// OffloadsOn turns on, for one test, the offloads of dev that an end
// playing role uses and that are off (result.OffloadsUsed: a sender's
// segmentation, tso and gso; a receiver's coalescing of segments, gro).
// It returns what it turned on and the undo that turns them off again
// (filling in Restored, or Error with what failed); with every one on
// already it changes nothing, and the change says so (no On). Linux, as
// root; End is left to the caller.
func OffloadsOn(dev, role string) (*result.OffloadChange, func(*result.OffloadChange), error) {
	return holding(func() (*result.OffloadChange, func(*result.OffloadChange), error) { return offloadsOn(dev, role) })
}
