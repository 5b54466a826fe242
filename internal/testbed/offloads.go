package testbed

import (
	"fmt"
	"strings"
)

// offloadNames are ethtool -k's long names of the offloads a try changes.
var offloadNames = map[string]string{"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload", "gro": "generic-receive-offload"}

// SetOffloads turns h's device's offloads (tso, gso, gro) on or off with
// ethtool -K in h's namespace.
func (h *Host) SetOffloads(on bool, names ...string) error {
	state := "off"
	if on {
		state = "on"
	}
	args := []string{"-K", h.Dev}
	for _, n := range names {
		args = append(args, n, state)
	}
	_, err := h.Ethtool(args...)
	return err
}

// Offloads are h's device's tso, gso and gro now, as `ethtool -k` in h's
// namespace shows them: "tso on, gso off, gro off".
func (h *Host) Offloads() (string, error) {
	out, err := h.Ethtool("-k", h.Dev)
	if err != nil {
		return "", err
	}
	state := map[string]string{}
	for line := range strings.Lines(string(out)) {
		name, v, _ := strings.Cut(line, ":")
		state[name], _, _ = strings.Cut(strings.TrimSpace(v), " ")
	}
	var parts []string
	for _, n := range []string{"tso", "gso", "gro"} {
		s := state[offloadNames[n]]
		if s == "" {
			return "", fmt.Errorf("no %s in ethtool -k %s:\n%s", offloadNames[n], h.Dev, out)
		}
		parts = append(parts, n+" "+s)
	}
	return strings.Join(parts, ", "), nil
}
