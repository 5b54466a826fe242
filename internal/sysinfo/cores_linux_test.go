package sysinfo

import (
	"strings"
	"testing"
	"time"
)

// A /proc/stat as Linux 6 writes it (two CPUs), and ones it never writes.
func TestParseProcStat(t *testing.T) {
	stat := "cpu  300 10 200 5000 20 3 40 7 0 0\n" +
		"cpu0 100 5 100 2500 10 1 20 3 0 0\n" +
		"cpu1 200 5 100 2500 10 2 20 4 0 0\n" +
		"intr 12345 0 0\nctxt 99\nsoftirq 1 2 3\n"
	c, err := parseProcStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 2 {
		t.Fatalf("%d cores, want 2", len(c))
	}
	tick := 10 * time.Millisecond
	want := CoreTime{User: 205 * tick, System: 100 * tick, Idle: 2510 * tick, IRQ: 2 * tick, SoftIRQ: 20 * tick, Steal: 4 * tick}
	if c[1] != want {
		t.Errorf("cpu1 %+v, want %+v", c[1], want)
	}
	for _, bad := range []string{"", "cpu 1 2 3\n", "cpu0 1 2 3\n", "cpu0 1 2 3 4 5 6 7 x\n", "cpu0 1 2 3 4 5 6 7 -8\n"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		} else if strings.ContainsAny(err.Error(), "\n") {
			t.Errorf("%q: %q is not one line", bad, err)
		}
	}
}
