package testbed

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ethtool runs ethtool with args in h's namespace, as an operator would
// (narrows changes the same settings through their ioctls), and returns
// what it printed; its error names the command and what it said.
func (h *Host) Ethtool(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := h.Command(ctx, "ethtool", args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ethtool %s in %s: %w: %s", strings.Join(args, " "), h.NS, err, out)
	}
	return out, nil
}

// SetRxFrames sets h's device's rx-frames (its receive coalescing, which
// Path.Moderation follows) with `ethtool -C` in h's namespace.
func (h *Host) SetRxFrames(frames int) error {
	_, err := h.Ethtool("-C", h.Dev, "rx-frames", strconv.Itoa(frames))
	return err
}

// RxFrames is h's device's rx-frames now, as `ethtool -c` in h's
// namespace shows it.
func (h *Host) RxFrames() (int, error) {
	out, err := h.Ethtool("-c", h.Dev)
	if err != nil {
		return 0, err
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
