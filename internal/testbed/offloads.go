package testbed

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// offloadNames are ethtool -k's long names of the offloads a try changes.
var offloadNames = map[string]string{"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload", "gro": "generic-receive-offload"}

// SetOffloads turns h's device's offloads (tso, gso, gro) on or off with
// ethtool -K in h's namespace.
func (h *Host) SetOffloads(on bool, names ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := []string{"-K", h.Dev}
	for _, n := range names {
		args = append(args, n, map[bool]string{true: "on", false: "off"}[on])
	}
	if out, err := h.Command(ctx, "ethtool", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool %s in %s: %w: %s", strings.Join(args, " "), h.NS, err, out)
	}
	return nil
}

// Offloads are h's device's tso, gso and gro now, as `ethtool -k` in h's
// namespace shows them: "tso on, gso off, gro off".
func (h *Host) Offloads() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := h.Command(ctx, "ethtool", "-k", h.Dev).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ethtool -k %s in %s: %w: %s", h.Dev, h.NS, err, out)
	}
	var parts []string
	for _, n := range []string{"tso", "gso", "gro"} {
		state := ""
		for line := range strings.Lines(string(out)) {
			if v, ok := strings.CutPrefix(line, offloadNames[n]+":"); ok {
				state, _, _ = strings.Cut(strings.TrimSpace(v), " ")
			}
		}
		if state == "" {
			return "", fmt.Errorf("no %s in ethtool -k %s:\n%s", offloadNames[n], h.Dev, out)
		}
		parts = append(parts, n+" "+state)
	}
	return strings.Join(parts, ", "), nil
}
