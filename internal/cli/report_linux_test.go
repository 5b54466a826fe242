package cli_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
)

// underUmask runs narrows through sh, its umask set first.
func underUmask(mask string) []string {
	return []string{"sh", "-c", "umask " + mask + `; exec "$0" "$@"`}
}

// TestReportModeFollowsUmask: the HTML report, which names hosts,
// addresses and users, is made 0666 less the umask of whoever runs
// narrows (it was 0644 whatever the umask), and a report it replaces
// keeps its mode.
func TestReportModeFollowsUmask(t *testing.T) {
	dir := t.TempDir()
	rr := result.NewReport("net rr", "db2:7447", result.Tool{Version: "0.1.0", Protocol: 1}, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	rr.RR = &result.RR{RoundTrips: 100, Duration: result.Seconds(time.Second), Rate: 100}
	saved := savedRun(t, dir, "rr.jsonl", rr)
	replaced := filepath.Join(dir, "replaced.html")
	if err := os.WriteFile(replaced, []byte("an earlier report"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(replaced, 0o600) //nolint:errcheck // past the test's own umask
	for _, c := range []struct {
		umask, out string
		want       os.FileMode
	}{
		{"077", "private.html", 0o600},
		{"027", "group.html", 0o640},
		{"022", "shared.html", 0o644},
		{"022", "replaced.html", 0o600},
	} {
		out := filepath.Join(dir, c.out)
		r := itest.RunWrapped(t, 30*time.Second, nil, underUmask(c.umask), "report", saved, "--html", out)
		if r.Code != 0 {
			t.Fatalf("umask %s: exit %d: %s", c.umask, r.Code, r.Stderr)
		}
		st, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.want {
			t.Errorf("umask %s, %s: mode %04o, want %04o", c.umask, c.out, st.Mode().Perm(), c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
