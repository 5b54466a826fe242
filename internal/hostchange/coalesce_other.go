//go:build !linux

package hostchange

import (
	"errors"

	"github.com/narrows/narrows/internal/result"
)

func leastCoalescing(string) (*result.CoalescingChange, func(*result.CoalescingChange), error) {
	return nil, nil, errors.New("changing a NIC's interrupt coalescing for a test is Linux's here; on Windows it is the adapter's advanced property (Interrupt Moderation), which restarts the adapter")
}

func undoFrom([]string) error { return errors.New("nothing to put back on this OS") }
