package dbload

import (
	"testing"
	"time"
)

// TestRowsPerCommit: narrows sizes a commit for about 50 commits a second
// per session at its share of the rate, one row at least, 500 rows or
// 4 MiB at most.
func TestRowsPerCommit(t *testing.T) {
	for _, c := range []struct {
		rate     float64
		sessions int
		row      int64
		want     int64
	}{
		{40e3, 1, 1000, 1},   // the README's small commit: one 1 KB row
		{5e6, 1, 1000, 100},  // the 5 MB/s: 100 rows
		{5e6, 4, 1000, 25},   // shared by four sessions
		{1e9, 1, 1000, 500},  // at most 500 rows
		{1e9, 1, 1 << 20, 4}, // at most 4 MiB
		{1e3, 8, 1000, 1},
	} {
		if got := RowsPerCommit(c.rate, c.sessions, c.row); got != c.want {
			t.Errorf("RowsPerCommit(%v, %d, %d) = %d, want %d", c.rate, c.sessions, c.row, got, c.want)
		}
	}
}

// TestPacer: sessions share one rate on the log position; the time every
// session was down is neither made up nor counted, nor the log others
// wrote meanwhile; a stall is forgiven beyond a second of log instead of
// made up in a burst. The clock is a fake one.
func TestPacer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := pacer{rate: 1e6} // 1 MB/s
	p.start(at(0))
	p.connect(at(0), 5000)
	p.connect(at(0), 5000)
	// At 100 ms, 100 kB are due: 40 kB commits go while less than that is
	// sent, and the one after waits.
	for i := range 3 {
		if p.take(at(100), 40e3) != 0 {
			t.Fatalf("commit %d of 3 had to wait", i+1)
		}
	}
	if w := p.take(at(100), 40e3); w == 0 {
		t.Fatal("a commit beyond the rate went at once")
	}
	// The log shows 85 kB for the first two (the server's overhead); the
	// third's INSERT failed.
	p.done(40e3, 5000+42_500)
	p.done(40e3, 5000+85_000)
	p.release(40e3)
	if p.log() != 85_000 || p.take(at(100), 10e3) != 0 {
		t.Fatalf("log %d, or a commit within the rate waits", p.log())
	}
	p.done(10e3, 5000+95_000)
	// Both sessions are down from 200 ms to 5.2 s; others write 1 MB meanwhile.
	p.disconnect(at(200))
	p.disconnect(at(200))
	p.connect(at(5200), 5000+95_000+1e6)
	if p.log() != 95_000 {
		t.Fatalf("log %d after the gap: others' log was counted", p.log())
	}
	// The pace resumes from the reconnect: the 5 s without a connection
	// are not made up.
	if p.take(at(5200), 10e3) == 0 {
		t.Fatal("the time without a connection is made up in a burst")
	}
	if p.take(at(5210), 10e3) != 0 {
		t.Fatal("a commit due after the gap waits")
	}
	p.done(10e3, 5000+95_000+1e6+10e3)
	// A server that took 3 s over one INSERT: no more than one second of
	// log is made up.
	if p.take(at(8210), 1e6) != 0 {
		t.Fatal("a commit after a stall waits")
	}
	if p.take(at(8210), 1) == 0 {
		t.Fatal("the stall is made up in a burst of more than a second of log")
	}
	p.done(1e6, 5000+95_000+1e6+10e3+1e6)
	p.disconnect(at(9000))
	p.stop(at(9000))
	if got := p.active(); got != 4*time.Second {
		t.Fatalf("active %v, want 4 s (9 s less 5 s without a connection)", got)
	}
}
