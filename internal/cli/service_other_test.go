//go:build !windows

package cli_test

import (
	"strings"
	"testing"
)

// TestServiceNotWindows: narrows service, whatever follows it, is one
// line saying it is Windows' and what to use here, exit 2.
func TestServiceNotWindows(t *testing.T) {
	for _, args := range [][]string{{"service"}, {"service", "install", "--insecure"}, {"service", "uninstall"}, {"service", "--help"}} {
		out, stderr, code := run(t, nil, args...)
		if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "Windows") || !strings.Contains(stderr, "systemd") {
			t.Fatalf("narrows %s: exit %d, stdout %q, stderr %q: want exit 2 and one line", strings.Join(args, " "), code, out, stderr)
		}
	}
}
