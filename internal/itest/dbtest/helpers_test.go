package dbtest

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/itest"
)

// replicaIn returns a replica's state in a poll: an interval record's
// "repl", or the summary's "repl"/"last"; nil when it is not there.
func replicaIn(poll map[string]any, name string) map[string]any {
	rs, _ := poll["replicas"].([]any)
	for _, r := range rs {
		if m := r.(map[string]any); m["replica"] == name {
			return m
		}
	}
	return nil
}

// replicaOf returns a replica's state in a repl interval record.
func replicaOf(iv map[string]any, name string) map[string]any {
	return replicaIn(itest.Obj(iv, "repl"), name)
}

// lastReplica returns a replica's state in a repl summary's last poll,
// failing the test when it is not there.
func lastReplica(t *testing.T, sum map[string]any, name string) map[string]any {
	t.Helper()
	st := replicaIn(itest.Obj(sum, "repl", "last"), name)
	if st == nil {
		t.Fatalf("no %s in the summary's last poll: %v", name, itest.Obj(sum, "repl", "last"))
	}
	return st
}

// killSessions ends narrows' own sessions on the PostgreSQL primary, as an
// administrator or a failover would.
func killSessions(t *testing.T) {
	t.Helper()
	exec1(t, open(t, pgSuper()), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'narrows' AND usename = 'narrows'`)
}

// open opens a session as a DBA would, for checks done by hand.
func open(t *testing.T, dsn string) *dbconn.Conn {
	t.Helper()
	d, err := dbconn.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dbconn.Open(context.Background(), d, dbconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func exec1(t *testing.T, c *dbconn.Conn, q string) {
	t.Helper()
	if _, err := c.Conn.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// pgSystemSet sets a parameter on the PostgreSQL primary (ALTER SYSTEM and
// a reload) for the rest of the test, and resets it when the test ends.
func pgSystemSet(t *testing.T, super *dbconn.Conn, name, value string) {
	t.Helper()
	exec1(t, super, "ALTER SYSTEM SET "+name+" = "+value)
	exec1(t, super, "SELECT pg_reload_conf()")
	t.Cleanup(func() {
		exec1(t, super, "ALTER SYSTEM RESET "+name)
		exec1(t, super, "SELECT pg_reload_conf()")
		time.Sleep(200 * time.Millisecond)
	})
	time.Sleep(200 * time.Millisecond) // the reload reaches every backend
}

// silentListener is a TCP port that accepts connections and never sends
// a byte, as a stuck server or the wrong port does; it returns host:port.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

func noSecrets(t *testing.T, what string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		for _, pw := range secrets {
			if strings.Contains(s, pw) {
				t.Fatalf("%s: a password appears in the output:\n%s", what, s)
			}
		}
	}
}
