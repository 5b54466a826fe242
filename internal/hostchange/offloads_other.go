//go:build !linux

package hostchange

import (
	"errors"

	"github.com/narrows/narrows/internal/result"
)

func offloadsOn(string, string) (*result.OffloadChange, func(*result.OffloadChange), error) {
	return nil, nil, errors.New("turning a NIC's offloads on for a test is Linux's here; on Windows they are the adapter's advanced properties (Large Send Offload, Receive Segment Coalescing), and changing one restarts the adapter")
}
