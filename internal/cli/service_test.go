package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/errext"
)

// TestRunServiceStates: what the Service Control Manager is told as the
// agent starts, is interrogated, stopped, or fails.
func TestRunServiceStates(t *testing.T) {
	type req string // stands in for svc.ChangeRequest
	control := func(r req) svcControl {
		switch r {
		case "stop", "shutdown":
			return svcStop
		case "interrogate":
			return svcInterrogate
		}
		return svcIgnore
	}
	// start runs runService with a fake agent that listens at once, or
	// fails with startErr, and stops when its context is done.
	start := func(startErr error) (reqs chan req, states chan svcState, done chan error) {
		reqs, states, done = make(chan req), make(chan svcState, 10), make(chan error, 1)
		go func() {
			done <- runService(context.Background(), reqs, control, func(s svcState) { states <- s },
				func(ctx context.Context, listening func()) error {
					if startErr != nil {
						return startErr
					}
					listening()
					<-ctx.Done()
					return nil
				})
		}()
		return
	}
	next := func(t *testing.T, states chan svcState, want svcState) {
		t.Helper()
		select {
		case s := <-states:
			if s != want {
				t.Fatalf("reported %v, want %v", s, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing reported, want %v", want)
		}
	}

	for _, stop := range []req{"stop", "shutdown"} {
		t.Run(string(stop), func(t *testing.T) {
			reqs, states, done := start(nil)
			next(t, states, svcStartPending)
			next(t, states, svcRunning)
			reqs <- "interrogate"
			next(t, states, svcRunning)
			reqs <- "pause" // not accepted: nothing changes
			reqs <- stop
			next(t, states, svcStopPending)
			if err := <-done; err != nil {
				t.Fatalf("a clean stop returned %v", err)
			}
			if ss, code := serviceExit(nil); ss || code != 0 {
				t.Fatalf("a clean stop's exit code: %v %d", ss, code)
			}
			if len(states) != 0 {
				t.Fatalf("reported %v after stop pending", <-states)
			}
		})
	}

	t.Run("bad flags", func(t *testing.T) {
		_, states, done := start(usagef("--listen %q: bad", "x"))
		next(t, states, svcStartPending)
		err := <-done
		if ss, code := serviceExit(err); !ss || code != ExitUsage {
			t.Fatalf("bad flags: exit %v %d, want service-specific 2", ss, code)
		}
		if len(states) != 0 {
			t.Fatalf("a service that never listened reported %v", <-states)
		}
	})
	t.Run("failure", func(t *testing.T) {
		_, _, done := start(errors.New("accept: broken"))
		if ss, code := serviceExit(<-done); !ss || code != ExitFailed {
			t.Fatalf("a failure: exit %v %d, want service-specific 1", ss, code)
		}
	})
}

// fakeEvents records what would go to the Event Log.
type fakeEvents struct{ got []string }

func (f *fakeEvents) Info(id uint32, m string) error    { return f.add("info", id, m) }
func (f *fakeEvents) Warning(id uint32, m string) error { return f.add("warning", id, m) }
func (f *fakeEvents) Error(id uint32, m string) error   { return f.add("error", id, m) }
func (f *fakeEvents) add(kind string, id uint32, m string) error {
	f.got = append(f.got, fmt.Sprintf("%s %d %s", kind, id, m))
	return nil
}

// TestEventHandler: the agent's log as Event Log events: the type by
// level, the message first, the attributes after it as slog writes them,
// no time or level in the text, debug only with --verbose.
func TestEventHandler(t *testing.T) {
	ev := &fakeEvents{}
	log := slog.New(newEventHandler(ev, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log.Info("agent listening", "addr", "127.0.0.1:7447", "auth", true)
	log.Debug("not with the level at info")
	log.With("remote", "10.0.0.1:5000").WithGroup("test").Warn("connection refused: too many", "kind", "rr")
	log.Error("accept failed", "err", errors.New(`a "quoted" reason`))
	log.Info(`message with "quotes" and = sign`)
	want := []string{
		"info 1 agent listening addr=127.0.0.1:7447 auth=true",
		"warning 1 connection refused: too many remote=10.0.0.1:5000 test.kind=rr",
		`error 1 accept failed err="a \"quoted\" reason"`,
		`info 1 message with "quotes" and = sign`,
	}
	if strings.Join(ev.got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(ev.got, "\n"), strings.Join(want, "\n"))
	}

	ev.got = nil
	slog.New(newEventHandler(ev, &slog.HandlerOptions{Level: slog.LevelDebug})).Debug("with --verbose")
	if len(ev.got) != 1 || ev.got[0] != "info 1 with --verbose" {
		t.Fatalf("debug with --verbose: %q", ev.got)
	}

	// What serve writes on standard error, a warning a line.
	ev.got = nil
	fmt.Fprintf(eventStderr{ev}, "narrows: warning: one\nnarrows: warning: two\n")
	if strings.Join(ev.got, "|") != "warning 1 narrows: warning: one|warning 1 narrows: warning: two" {
		t.Fatalf("standard error as events: %q", ev.got)
	}
}

// TestServiceArgs: install checks the service's flags as serve would,
// refuses a secret on the command line in any form without repeating
// it, and stores each flag once with absolute paths.
func TestServiceArgs(t *testing.T) {
	dir := t.TempDir()
	const sec = "a-service-secret-0123456789"
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(sec+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	envWith := func(vars map[string]string) (Env, *bytes.Buffer) {
		var errb bytes.Buffer
		e := Env{Stdout: &bytes.Buffer{}, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
		e.ReadFile = func(p string) ([]byte, error) { return readSecretFile(e, p) }
		return e, &errb
	}
	env, _ := envWith(nil)

	got, err := serviceArgs(env, []string{"--secret-file", "secret", "--listen", ":7447", "--disk-path", ".", "--disk-path", dir, "--verbose"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--disk-path=" + dir, "--disk-path=" + dir, "--listen=:7447", "--secret-file=" + file, "--verbose=true"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("stored flags:\n%q\nwant\n%q", got, want)
	}
	if got, err := serviceArgs(env, []string{"--insecure", "--listen", "127.0.0.1:7447"}); err != nil || strings.Join(got, " ") != "--insecure=true --listen=127.0.0.1:7447" {
		t.Fatalf("--insecure: %q, %v", got, err)
	}

	refused := []struct {
		name string
		vars map[string]string
		args []string
		want string
	}{
		{"--secret", nil, []string{"--secret", sec, "--listen", ":7447"}, "a secret on the command line"},
		{"-secret=", nil, []string{"-secret=" + sec}, "a secret on the command line"},
		{"NARROWS_SECRET=", nil, []string{"NARROWS_SECRET=" + sec}, "a secret on the command line"},
		{"the secret as an argument", nil, []string{"--secret-file", file, sec}, "1 argument(s) after the flags"},
		{"the secret in a flag's value", nil, []string{"--secret-file", file, "--listen", ":" + sec}, "the secret itself is on the command line"},
		{"the secret in --max-memory", nil, []string{"--max-memory", sec, "--secret-file", file}, "the secret itself is on the command line"},
		{"no secret", nil, []string{"--listen", ":7447"}, "give --secret-file FILE"},
		{"only this shell's NARROWS_SECRET", map[string]string{"NARROWS_SECRET": sec}, []string{"--listen", ":7447"}, "does not see this shell's NARROWS_SECRET"},
		{"--insecure off loopback", nil, []string{"--insecure", "--listen", ":7447"}, "loopback"},
		{"no such file", nil, []string{"--secret-file", filepath.Join(dir, "none")}, "cannot read the secret file"},
		{"a bad flag", nil, []string{"--secret-file", file, "--max-tests", "0"}, "--max-tests must be at least 1"},
		{"an unknown flag", nil, []string{"--frob"}, "flag provided but not defined"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			env, errb := envWith(c.vars)
			_, err := serviceArgs(env, c.args)
			if !errext.IsUser(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a usage error with %q", err, c.want)
			}
			if strings.Contains(err.Error(), sec) || strings.Contains(errb.String(), sec) {
				t.Fatalf("the secret is in the message: %v %s", err, errb)
			}
		})
	}
}
