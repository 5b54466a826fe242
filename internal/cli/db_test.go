package cli_test

import (
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/cli"
)

// TestDBBadInput: the db commands' mistakes that need no server get one
// line naming what is wrong, exit code 2, and never the password.
func TestDBBadInput(t *testing.T) {
	const pw = "S3cret-pw-77"
	pg := "postgres://narrows:" + pw + "@127.0.0.1:1/postgres"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no dsn", []string{"db", "ping"}, "--dsn is required"},
		{"unknown scheme", []string{"db", "ping", "--dsn", "oracle://u:" + pw + "@db1/x"}, `unknown scheme "oracle"`},
		{"negative count", []string{"db", "ping", "--dsn", pg, "--count", "-1"}, "--count -1: must not be negative"},
		{"no queries", []string{"db", "ping", "--dsn", pg, "--queries", "0"}, "--queries 0: must be at least 1"},
		{"too many probes", []string{"db", "ping", "--dsn", pg, "--tcp-probes", "41"}, "--tcp-probes 41: use 0 to 40"},
		{"query and payload", []string{"db", "ping", "--dsn", pg, "--query", "SELECT 2", "--request", "10"}, "--query and --request: choose one"},
		{"payload too large", []string{"db", "ping", "--dsn", pg, "--request", "2M"}, "--request 2M: use 1 byte to 1M"},
		{"short interval", []string{"db", "ping", "--dsn", pg, "--interval", "1ms"}, "at least 10ms"},
		{"replica of another engine", []string{"db", "repl", "--dsn", pg, "--replica-dsn", "r1=mysql://u:" + pw + "@db2/x"}, "runs the primary's engine"},
		{"mysql repl without replicas", []string{"db", "repl", "--dsn", "mysql://u:" + pw + "@127.0.0.1:1/x"}, "name each replica with --replica-dsn"},
		{"load without rate", []string{"db", "load", "--dsn", pg}, "--log-rate is required"},
		{"load bad rate", []string{"db", "load", "--dsn", pg, "--rate", "fast"}, `invalid rate "fast"`},
		{"load bad table", []string{"db", "load", "--dsn", pg, "--rate", "1MB/s", "--table", "x-y"}, `--table "x-y"`},
		{"load tiny rows", []string{"db", "load", "--dsn", pg, "--rate", "1MB/s", "--row-size", "8"}, "--row-size 8: use 16 bytes to 1M"},
		{"load no sessions", []string{"db", "load", "--dsn", pg, "--rate", "1MB/s", "--sessions", "0"}, "--sessions 0: use 1 to 64"},
		{"load too many sessions", []string{"db", "load", "--dsn", pg, "--rate", "1MB/s", "--sessions", "65"}, "--sessions 65: use 1 to 64"},
		{"load too many rows a commit", []string{"db", "load", "--dsn", pg, "--rate", "1MB/s", "--rows-per-commit", "2001"}, "--rows-per-commit 2001: use 1 to 2000"},
		{"load too big a commit", []string{"db", "load", "--dsn", pg, "--rate", "1MB/s", "--rows-per-commit", "100", "--row-size", "1M"}, "is 100 MiB a commit: keep it within 16 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, nil, c.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit code %d, want 2; stderr %q", code, stderr)
			}
			line := strings.TrimSuffix(stderr, "\n")
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "narrows: ") || !strings.Contains(line, c.want) {
				t.Fatalf("stderr %q, want one line containing %q", stderr, c.want)
			}
			if strings.Contains(stdout+stderr, pw) {
				t.Fatalf("the password appears: stdout %q stderr %q", stdout, stderr)
			}
		})
	}
}
