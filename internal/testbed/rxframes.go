package testbed

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SetRxFrames sets h's device's rx-frames (its receive coalescing, which
// Path.Moderation follows) with `ethtool -C` in h's namespace, as an
// operator would; narrows' agent changes it through the same ioctl.
func (h *Host) SetRxFrames(frames int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := h.Command(ctx, "ethtool", "-C", h.Dev, "rx-frames", strconv.Itoa(frames)).CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool -C %s rx-frames %d in %s: %w: %s", h.Dev, frames, h.NS, err, out)
	}
	return nil
}

// RxFrames is h's device's rx-frames now, as `ethtool -c` in h's
// namespace shows it.
func (h *Host) RxFrames() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := h.Command(ctx, "ethtool", "-c", h.Dev).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("ethtool -c %s in %s: %w: %s", h.Dev, h.NS, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, "rx-frames:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("no rx-frames in ethtool -c %s:\n%s", h.Dev, out)
}
