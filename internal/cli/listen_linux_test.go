//go:build linux

package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/itest"
)

// TestServeListensWhereItChecked: `--listen localhost:PORT` is checked as
// 127.0.0.1, so that is where the agent listens, whatever the resolver
// says "localhost" is. The agent runs in a mount namespace of its own
// whose /etc/hosts maps localhost to 127.0.0.2 (before the fix it bound
// there: with a hosts file naming another machine's address, an --insecure
// agent would have left loopback).
func TestServeListensWhereItChecked(t *testing.T) {
	itest.RequireRoot(t, "a private /etc/hosts needs a mount namespace")
	if _, err := exec.LookPath("unshare"); err != nil {
		itest.SkipOrFail(t, "unshare is not on PATH (util-linux): %v", err)
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.2 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Show that the namespace's resolver really says 127.0.0.2.
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount --bind "$0" /etc/hosts && getent hosts localhost`, hosts).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "127.0.0.2") {
		t.Fatalf("the private hosts file does not take: %v: %s", err, out)
	}
	a := itest.StartAgent(t, []string{"--listen", "localhost:0"},
		"unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind "`+hosts+`" /etc/hosts && exec "$0" "$@"`)
	if !strings.HasPrefix(a.Addr, "127.0.0.1:") {
		t.Fatalf("--listen localhost:0 listened on %s, want 127.0.0.1; log:\n%s", a.Addr, a.Log())
	}
}
