package dbconn

import (
	"context"
	"testing"
	"time"
)

func TestParseLSN(t *testing.T) {
	for in, want := range map[string]int64{"0/0": 0, "0/3000060": 0x3000060, "16/B374D848": 0x16<<32 | 0xB374D848} {
		got, err := ParseLSN(in)
		if err != nil || got != want {
			t.Errorf("ParseLSN(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "16", "x/1", "1/2/3"} {
		if _, err := ParseLSN(bad); err == nil {
			t.Errorf("ParseLSN(%q) accepted", bad)
		}
	}
}

// TestReopenGivesUp: Reopen tries until stop says no more, and reports
// the failed attempts and the last reason.
func TestReopenGivesUp(t *testing.T) {
	d, err := Parse("postgres://u:Hunter2-long@127.0.0.1:1/x?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	stop := func() bool { calls++; return calls > 4 }
	c, failed, last := Reopen(context.Background(), d, Options{Timeout: time.Second}, time.Millisecond, time.Millisecond, stop)
	if c != nil || failed != 2 || !Is(last, Unreachable) {
		t.Fatalf("Reopen = %v, %d failed, last %v; want nil, 2, an unreachable server", c, failed, last)
	}
}
