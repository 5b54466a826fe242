package wakeup

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitPid waits up to 20 s (Wine starts a process slowly) for a pid
// written to file, a line of its own.
func waitPid(t *testing.T, file string) int {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
	}
	t.Fatalf("no pid was written to %s within 20 s", file)
	return 0
}
