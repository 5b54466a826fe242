//go:build linux

package cli_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// TestSecretFile: a secret file that is not a plain file, too big, or one
// character repeated is refused in one line, exit 2, at once (a FIFO used
// to block the read for ever, /dev/zero to fill memory); one that others
// may read is used with a warning, as ssh warns; the file and
// NARROWS_SECRET are trimmed alike.
func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode) //nolint:errcheck // past the umask
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	rr := func(secretFile string) []string {
		args := []string{"net", "rr", "--to", "127.0.0.1:1", "--duration", "1s"}
		if secretFile != "" {
			args = append(args, "--secret-file", secretFile)
		}
		return args
	}
	cases := []struct {
		name string
		env  []string
		args []string
		want string // in the last line of stderr
		warn string // a line before it, if any
	}{
		{"a FIFO", nil, rr(fifo), "is not a regular file (a FIFO)", ""},
		{"/dev/zero", nil, rr("/dev/zero"), "is not a regular file (a device)", ""},
		{"a directory", nil, rr(dir), "is not a regular file (a directory)", ""},
		{"5 KiB", nil, rr(file("big", strings.Repeat("0123456789abcdef", 320), 0o600)), "is larger than 4 KiB", ""},
		{"one character repeated", nil, rr(file("aaa", "aaaaaaaaaaaaaaaa\n", 0o600)), "holds one character repeated", ""},
		{"one character repeated, environment", []string{"NARROWS_SECRET= zzzzzzzzzzzz "}, rr(""), "NARROWS_SECRET holds one character repeated", ""},
		{"readable by others", nil, rr(file("open", "a-good-secret-0123456789\n", 0o644)),
			"connection refused", "can be read by other users (mode 0644)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Now()
			r := itest.Run(t, 10*time.Second, c.env, c.args...)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != 2 || !strings.Contains(lines[len(lines)-1], c.want) {
				t.Fatalf("exit %d, stderr %q: want exit 2 and a last line with %q", r.Code, r.Stderr, c.want)
			}
			if c.warn == "" && len(lines) != 1 {
				t.Fatalf("stderr %q: want one line", r.Stderr)
			}
			if c.warn != "" && (len(lines) != 2 || !strings.Contains(lines[0], c.warn)) {
				t.Fatalf("stderr %q: want the warning %q, then the error", r.Stderr, c.warn)
			}
			if strings.Contains(r.Stderr, "a-good-secret") {
				t.Fatalf("the secret is in the output: %q", r.Stderr)
			}
			t.Logf("%v: %s", time.Since(t0).Round(time.Millisecond), lines[len(lines)-1])
		})
	}

	// Trimmed alike: the agent holds the secret from a file with a line
	// end, the client from the environment with spaces around it.
	agentFile := file("agent", "  trim-me-0123456789abcdef\n", 0o600)
	a := itest.StartAgent(t, []string{"--listen", "127.0.0.1:0", "--secret-file", agentFile})
	r := itest.Run(t, 20*time.Second, []string{"NARROWS_SECRET=  trim-me-0123456789abcdef  "}, "net", "rr", "--to", a.Addr, "--duration", "1s")
	if r.Code != 0 {
		t.Fatalf("a secret trimmed in one place and not the other: exit %d: %s\nagent log:\n%s", r.Code, r.Stderr, a.Log())
	}
}

// TestSecretWarnedOncePerRun: doctor runs its steps in its own process,
// each reading the secret file again; a secret file others may read is
// warned about once in the run (it was once per step: 8 times with an
// agent and no database). Its run and report files, under umask 077,
// are 0600.
func TestSecretWarnedOncePerRun(t *testing.T) {
	t.Parallel() // it waits on a whole doctor or plan run, and holds what ran, not how fast
	dir := t.TempDir()
	secret := filepath.Join(dir, "narrows.secret")
	if err := os.WriteFile(secret, []byte(itest.Secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(secret, 0o644) //nolint:errcheck // past the test's own umask
	a := itest.StartAgent(t, []string{"--secret-file", secret})
	run := filepath.Join(dir, "doctor.jsonl")
	r := itest.RunWrapped(t, 2*time.Minute, nil, underUmask("077"), "doctor", "--to", a.Addr, "--secret-file", secret, "--budget", "20s", "--out", run)
	if r.Code != 0 {
		t.Fatalf("doctor: exit %d: %s", r.Code, r.Stderr)
	}
	ran := strings.Count(r.Stdout, " ran, ")
	if n := strings.Count(r.Stderr, "can be read by other users (mode 0644)"); n != 1 || ran < 4 {
		t.Errorf("%d warnings of the secret file in one doctor run (%d steps ran), want 1:\n%s", n, ran, r.Stderr)
	}
	for _, f := range []string{run, strings.TrimSuffix(run, ".jsonl") + ".html"} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s under umask 077: %v, want mode 0600", f, err)
		}
	}
}

// TestSecretRecipesArePrivate: the README's and docs/commands.md's way to
// make the secret file, and make run's (scripts/run-local.sh), give a
// file only its owner may read, under the common umask 022: narrows
// warns about none of them (each used to make 0644, which every command
// then warned about).
func TestSecretRecipesArePrivate(t *testing.T) {
	t.Parallel() // it waits on a whole doctor or plan run, and holds what ran, not how fast
	root := filepath.Join("..", "..")
	for _, doc := range []string{"README.md", filepath.Join("docs", "commands.md")} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		var recipe string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "openssl rand") && strings.Contains(line, "> narrows.secret") {
				recipe = line
			}
		}
		if recipe == "" {
			t.Fatalf("%s: no line that makes narrows.secret", doc)
		}
		work := t.TempDir()
		cmd := exec.Command("sh", "-c", "umask 022; "+recipe)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %q: %v\n%s", doc, recipe, err, out)
		}
		st, err := os.Stat(filepath.Join(work, "narrows.secret"))
		if err != nil || st.Mode().Perm() != 0o600 || st.Size() < 32 {
			t.Errorf("%s: %q under umask 022 made %v (%v), want a secret of mode 0600", doc, recipe, st.Mode(), err)
		}
	}

	// make run is doctor against a loopback agent and, where PostgreSQL's
	// server programs are (make test installs them), a throwaway cluster:
	// every step runs but the host experiment (34 s a machine, which its
	// budget cannot hold: it says what budget would), the run and its
	// report are where it says, and the cluster is gone when it ends.
	runDir := t.TempDir()
	cmd := exec.Command("sh", "-c", `umask 022; exec bash scripts/run-local.sh "$0"`, itest.Binary(t))
	cmd.Dir = root
	// Its own budget (60 s), as a newcomer runs it: doctor refuses one
	// below what its steps take at the least (51 s here).
	cmd.Env = append(os.Environ(), "RUN_DIR="+runDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make run's script: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "can be read by other users") || !strings.Contains(string(out), "16 of 17 steps ran (1 skipped)") ||
		!strings.Contains(string(out), "--budget 4m or more") {
		t.Errorf("make run's script under umask 022: want every step run, no warning:\n%s", out)
	}
	for _, ext := range []string{".jsonl", ".html"} {
		if m, _ := filepath.Glob(filepath.Join(runDir, "narrows-doctor-*"+ext)); len(m) != 1 || !strings.Contains(string(out), m[0]) {
			t.Errorf("make run's %s: %v, not named in its output", ext, m)
		}
	}
	if m := regexp.MustCompile(`a throwaway PostgreSQL [0-9.]+ on (127\.0\.0\.1:\d+)`).FindSubmatch(out); m == nil {
		t.Errorf("make run started no PostgreSQL where make test installed it:\n%s", out)
	} else if c, err := net.DialTimeout("tcp", string(m[1]), time.Second); err == nil {
		c.Close()
		t.Errorf("make run's PostgreSQL still answers at %s after it ended", m[1])
	}
}
