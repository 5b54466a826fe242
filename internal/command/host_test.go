package command

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/result"
)

// TestAgentSide: an agent's side is taken only when its figures can be
// true; a hostile agent's are left out, saying why.
func TestAgentSide(t *testing.T) {
	us := func(n int) result.Seconds { return result.Seconds(time.Duration(n) * time.Microsecond) }
	good := func() *result.HostSide {
		return &result.HostSide{Wakeup: &result.Wakeup{Verdict: result.WakeupCosts, PerWake: us(20), PerWakeMargin: us(2), AsIs: us(53), Awake: us(13)}}
	}
	if err := agentSide(good()); err != nil {
		t.Fatalf("an honest side refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		bend func(*result.HostSide)
		want string
	}{
		{"no experiment", func(s *result.HostSide) { s.Wakeup = nil }, "no experiment"},
		{"a verdict of its own", func(s *result.HostSide) { s.Wakeup.Verdict = "\x1b[2Jcosts" }, "a verdict narrows does not give"},
		{"an hour a wake-up", func(s *result.HostSide) { s.Wakeup.PerWake = result.Seconds(time.Hour) }, "a figure of 3600 s a round trip"},
		{"a negative margin", func(s *result.HostSide) { s.Wakeup.PerWakeMargin = -us(1) }, "below zero"},
		{"endless blocks", func(s *result.HostSide) { s.Wakeup.Blocks = make([]result.WakeupBlock, maxAgentBlocks+1) }, "more than any budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.bend(s)
			if err := agentSide(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("agentSide = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestHostDatabaseOrPair: a database that cannot be reached is the run's
// error for narrows host --dsn, and for doctor's host step (OrPair) it
// leaves this host's experiment to narrows' pair, saying why once.
func TestHostDatabaseOrPair(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing answers there now: a refused connect
	d, err := dbconn.Parse("postgres://narrows:s3cret-pw@" + addr + "/postgres")
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	env := Env{Note: func(s string) { notes = append(notes, s) }}
	c := Host{DSN: d, Timeout: 2 * time.Second}
	if w, db, err := c.database(context.Background(), env); err == nil || w != nil || db != nil {
		t.Errorf("narrows host --dsn to a closed port: %v, %v, %v; want the run's error", w, db, err)
	}
	notes = nil
	c.OrPair = true
	w, db, err := c.database(context.Background(), env)
	if err != nil || w != nil || db != nil {
		t.Fatalf("doctor's host step to a closed port: %v, %v, %v; want neither, for the pair", w, db, err)
	}
	got := strings.Join(notes, "\n")
	if !strings.Contains(got, "could not be reached") || !strings.Contains(got, "narrows' pair in its place") || strings.Contains(got, "s3cret-pw") {
		t.Errorf("notes %q: want why, the pair named, and no secret", got)
	}
}
