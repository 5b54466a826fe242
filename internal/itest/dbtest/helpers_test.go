package dbtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/itest"
)

// proc is narrows running in the background.
type proc struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	done     chan struct{}
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(itest.Binary(t), args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.done
		out := p.out.String()
		if len(out) > 3000 {
			out = "…" + out[len(out)-3000:]
		}
		t.Fatalf("narrows %v did not finish within %s; stdout:\n%s\nstderr:\n%s", p.cmd.Args[1:], limit, out, p.err.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// records parses --json output: intervals, then the summary.
func records(t *testing.T, out string) (ivs []map[string]any, sum map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		if m["schema"] != "narrows/v1" {
			t.Fatalf("record without schema: %s", sc.Text())
		}
		switch m["type"] {
		case "interval":
			ivs = append(ivs, m)
		case "summary":
			sum = m
		}
	}
	if sum == nil {
		t.Fatalf("no summary in:\n%s", out)
	}
	return ivs, sum
}

func obj(m any, path ...string) map[string]any {
	for _, p := range path {
		mm, _ := m.(map[string]any)
		m = mm[p]
	}
	mm, _ := m.(map[string]any)
	return mm
}

func num(m map[string]any, k string) (float64, bool) {
	v, ok := m[k].(float64)
	return v, ok
}

// replicaOf returns a replica's state in a repl interval record.
func replicaOf(iv map[string]any, name string) map[string]any {
	repl := obj(iv, "repl")
	if repl == nil {
		return nil
	}
	rs, _ := repl["replicas"].([]any)
	for _, r := range rs {
		if m := r.(map[string]any); m["replica"] == name {
			return m
		}
	}
	return nil
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

var _ = os.Getenv
