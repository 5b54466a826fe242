package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/cli"
)

// TestDoctorBadInput: each mistake is one line, exit 2, and no run file.
func TestDoctorBadInput(t *testing.T) {
	dir := t.TempDir()
	taken := filepath.Join(dir, "taken.jsonl")
	os.WriteFile(taken, []byte("earlier run\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "give what to examine"},
		{[]string{"--data-path", dir, "--budget", "5s"}, "--budget 5s"},
		{[]string{"--data-path", dir, "--budget", "soon"}, "--budget"},
		{[]string{"--data-path", filepath.Join(dir, "nowhere")}, "nowhere does not exist"},
		{[]string{"--log-path", taken}, "is not a directory (a file)"},
		{[]string{"--data-path", dir, "--backup-path", "/backup"}, "give --to HOST too"},
		{[]string{"--data-path", dir, "--out", taken}, "--out " + taken},
		// The DSNs are read before any step runs, not found as failed
		// steps; a password in one is never repeated.
		{[]string{"--dsn", "postgres://narrows:s3cret@db1:notaport/postgres"}, "doctor: --dsn"},
		{[]string{"--data-path", dir, "--replica-dsn", "standby=postgres://narrows@db2/postgres"}, "give --dsn too"},
		{[]string{"--dsn", "postgres://narrows@db1/postgres", "--replica-dsn", "standby=mysql://narrows:s3cret@db2/app"}, "a replica runs the primary's engine"},
	} {
		_, stderr, code := run(t, nil, append([]string{"doctor"}, c.args...)...)
		if code != cli.ExitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || strings.Contains(stderr, "s3cret") {
			t.Errorf("doctor %v: exit %d, %q; want exit 2, one line with %q", c.args, code, stderr, c.want)
		}
	}
	if b, _ := os.ReadFile(taken); string(b) != "earlier run\n" {
		t.Errorf("an earlier run's file was changed: %q", b)
	}
}
