package itest

import (
	"bytes"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Buffer is a command's output, read while the command still writes it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) WriteString(s string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.WriteString(s)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Proc is narrows running in the background; the test's end kills it if
// it still runs.
type Proc struct {
	Cmd      *exec.Cmd
	Out, Err *Buffer
	Done     chan struct{} // closed once it has exited
}

// Start runs the narrows under test with args, env added to this
// process's environment.
func Start(t testing.TB, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(Binary(t), args...), Out: &Buffer{}, Err: &Buffer{}, Done: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Err
	if err := StartTied(p.Cmd); err != nil {
		t.Fatal(err)
	}
	go func() { p.Cmd.Wait(); close(p.Done) }() //nolint:errcheck // the exit code is read from ProcessState
	t.Cleanup(func() {
		select {
		case <-p.Done:
		default:
			p.Cmd.Process.Kill() //nolint:errcheck
			<-p.Done
		}
	})
	return p
}

// Wait is its exit code, once it has exited within limit; past limit it
// is killed and the test fails with the end of what it wrote.
func (p *Proc) Wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.Done:
	case <-time.After(limit):
		p.Cmd.Process.Kill() //nolint:errcheck
		<-p.Done
		out := p.Out.String()
		if len(out) > 3000 {
			out = "…" + out[len(out)-3000:]
		}
		t.Fatalf("narrows %v did not finish within %s; stdout:\n%s\nstderr:\n%s", p.Cmd.Args[1:], limit, out, p.Err.String())
	}
	return p.Cmd.ProcessState.ExitCode()
}
