//go:build linux

package wintest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// TestService: narrows.exe installed as a Windows service under Wine's
// Service Control Manager: started, measured through by the Linux
// client, stopped and removed, with its log in the Event Log. Also the
// service failing at start (its port taken) with exit code 2, and the
// secret file's DACL warning (Wine gives a file of mode 0644 an Everyone
// read entry).
//
// Wine ends a session's services once its last ordinary process exits
// (sending them Shutdown), and starts services.exe again with the next;
// Windows keeps them. So a keeper (cmd.exe waiting on its input) holds
// the session for the test; being its first process, it also hands
// services.exe its standard error, where Wine's Event Log writes each
// event (WINEDEBUG +eventlog: ReportEventW with the text).
func TestService(t *testing.T) {
	w := itest.NewWine(t)
	t0 := time.Now()
	w.Restart(t)

	dir := t.TempDir()
	events, err := os.Create(filepath.Join(dir, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	keeper := w.Program(context.Background(), "cmd")
	keeper.Env = append(keeper.Env, "WINEDEBUG=-all,+eventlog")
	keeper.Stderr = events // a file: services.exe keeps it open after cmd ends
	in, err := keeper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := keeper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := keeper.Start(); err != nil {
		t.Fatal(err)
	}
	// Once cmd answers, the session and its services.exe are the
	// keeper's; before, narrows.exe could start them, and they would hold
	// its output open.
	fmt.Fprint(in, "echo narrows-keeper-ready\r\n")
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// After the prompt: cmd does not echo what it reads from a pipe.
			if strings.HasSuffix(strings.TrimSpace(sc.Text()), ">narrows-keeper-ready") {
				ready <- true
				io.Copy(io.Discard, out) //nolint:errcheck // until cmd ends
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("cmd.exe under Wine ended before it answered")
		}
	case <-time.After(time.Minute):
		keeper.Process.Kill()
		t.Fatal("cmd.exe under Wine did not answer within a minute")
	}
	stopKeeper := func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- keeper.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			keeper.Process.Kill()
			<-done
		}
	}
	defer stopKeeper()

	run := func(wantCode int, args ...string) itest.Result {
		t.Helper()
		r := w.Run(t, time.Minute, nil, args...)
		if r.Code != wantCode {
			t.Fatalf("narrows.exe %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, wantCode, r.Stdout, r.Stderr)
		}
		return r
	}
	// Left installed by a failure, it would start with the next session.
	defer func() {
		if r := w.Run(t, time.Minute, nil, "service", "uninstall"); r.Code == 0 {
			t.Log("removed the service this test left")
		}
	}()

	secret := filepath.Join(dir, "secret")
	open := filepath.Join(dir, "open")
	for p, mode := range map[string]os.FileMode{secret: 0o600, open: 0o644} {
		if err := os.WriteFile(p, []byte(itest.Secret+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode) //nolint:errcheck // past the umask
	}
	// A bad flag is refused, nothing installed; a file of mode 0600 gets
	// no warning (Wine gives it no entry for Everyone).
	r := run(2, "service", "install", "--secret-file", w.Path(secret), "--max-tests", "0")
	if strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, "--max-tests must be at least 1") {
		t.Fatalf("install with a bad flag: %s", r.Stderr)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// Installed with a secret file others may read: warned here, from its
	// DACL, and again in the Event Log at each start.
	r = run(0, "service", "install", "--secret-file", w.Path(open), "--listen", addr)
	if !strings.Contains(r.Stdout, "installed the service narrows") || strings.Contains(r.Stdout, itest.Secret) ||
		!strings.Contains(r.Stderr, "can be read by other users (Everyone may read it): icacls") {
		t.Fatalf("install: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	run(2, "service", "install", "--secret-file", w.Path(secret), "--listen", addr) // already there

	// The port taken (ln is still open): the service stops at start, with
	// serve's exit code for bad input.
	r = run(1, "service", "start")
	if !strings.Contains(r.Stderr, "the service stopped (exit code 2)") {
		t.Fatalf("start with the port taken: %s", r.Stderr)
	}
	ln.Close()
	r = run(0, "service", "start")
	if !strings.Contains(r.Stdout, "is running (pid") {
		t.Fatalf("start: %s", r.Stdout)
	}
	rr := itest.Run(t, time.Minute, nil, "net", "rr", "--to", addr, "--duration", "1s")
	if rr.Code != 0 {
		t.Fatalf("net rr through the service: exit %d\n%s", rr.Code, rr.Stderr)
	}
	r = run(0, "service", "status")
	if !strings.Contains(r.Stdout, "is running (pid") || !strings.Contains(r.Stdout, "serve --listen="+addr+" --secret-file=") {
		t.Fatalf("status: %s", r.Stdout)
	}
	if r = run(0, "service", "stop"); !strings.Contains(r.Stdout, "is stopped") {
		t.Fatalf("stop: %s", r.Stdout)
	}
	if r = run(0, "service", "uninstall"); !strings.Contains(r.Stdout, "removed the service narrows") {
		t.Fatalf("uninstall: %s", r.Stdout)
	}
	if r = run(2, "service", "status"); !strings.Contains(r.Stderr, "not installed") {
		t.Fatalf("status after uninstall: %s", r.Stderr)
	}
	scq := w.Program(context.Background(), "sc", "query", "narrows")
	scq.WaitDelay = 5 * time.Second
	time.AfterFunc(30*time.Second, func() { scq.Process.Kill() })
	sc, _ := scq.CombinedOutput()
	if strings.Contains(string(sc), "SERVICE_NAME") {
		t.Fatalf("sc query after uninstall:\n%s", sc)
	}

	stopKeeper()
	w.Restart(t)
	b, _ := os.ReadFile(events.Name())
	for _, want := range []string{
		`err:eventlog:ReportEventW L"narrows serve stopped: cannot listen on ` + addr + `: the port is in use`,
		fmt.Sprintf(`trace:eventlog:ReportEventW L"agent listening addr=%s auth=true`, addr),
		`L"test finished`,
		`warn:eventlog:ReportEventW L"narrows: warning: the secret file ` + strings.ReplaceAll(w.Path(open), `\`, `\\`) + ` can be read by other users (Everyone may read it)`,
		`trace:eventlog:ReportEventW L"agent stopped"`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the Event Log lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), itest.Secret) {
		t.Errorf("the secret is in the Event Log:\n%s", b)
	}
	var logged []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "ReportEventW") {
			logged = append(logged, line)
		}
	}
	t.Logf("%v; the Event Log as Wine wrote it:\n%s", time.Since(t0).Round(time.Millisecond), strings.Join(logged, "\n"))
}
