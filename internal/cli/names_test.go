package cli_test

import (
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/cli"
)

// TestOlderNames: one name per flag across commands (issue 27), the older
// names still accepted. Each older name reaches the value the one name
// does: the same mistake under either gives the same line, naming the one
// name; both names given two values is one line, exit 2; the help lists
// the flag once, under its one name, and mentions the older.
func TestOlderNames(t *testing.T) {
	pg := "postgres://narrows@127.0.0.1:1/postgres"
	same := []struct {
		name     string
		one, old []string
		want     string
	}{
		{"disk --on", []string{"disk", "--path", "/backup", "--to", "db2:"}, []string{"disk", "--path", "/backup", "--on", "db2:"}, `--to "db2:": invalid port`},
		{"disk --on with --device", []string{"disk", "--device", "/dev/sda", "--to", "db2"}, []string{"disk", "--device", "/dev/sda", "--on", "db2"}, "--device with --to"},
		{"db ping --agent", []string{"db", "ping", "--dsn", pg, "--to", "db2:"}, []string{"db", "ping", "--dsn", pg, "--agent", "db2:"}, `--to "db2:": invalid port`},
		{"db ping --payload", []string{"db", "ping", "--dsn", pg, "--request", "2M"}, []string{"db", "ping", "--dsn", pg, "--payload", "2M"}, "--request 2M: use 1 byte to 1M"},
		{"db ping --payload with --query", []string{"db", "ping", "--dsn", pg, "--query", "SELECT 2", "--request", "10"}, []string{"db", "ping", "--dsn", pg, "--query", "SELECT 2", "--payload", "10"}, "--query and --request: choose one"},
		{"plan chatty --payload", []string{"plan", "chatty", "--assume", "rtt=1ms", "--request", "500"}, []string{"plan", "chatty", "--assume", "rtt=1ms", "--payload", "500"}, "--request is the query measured"},
		{"db load --rate", []string{"db", "load", "--dsn", pg, "--log-rate", "fast"}, []string{"db", "load", "--dsn", pg, "--rate", "fast"}, `--log-rate: invalid rate "fast"`},
		{"db load --rate read", []string{"db", "load", "--dsn", pg, "--log-rate", "1MB/s", "--sessions", "0"}, []string{"db", "load", "--dsn", pg, "--rate", "1MB/s", "--sessions", "0"}, "--sessions 0: use 1 to 64"},
		// The same value under both names is no clash.
		{"disk --on and --to alike", []string{"disk", "--path", "/backup", "--to", "db2:"}, []string{"disk", "--path", "/backup", "--on", "db2:", "--to", "db2:"}, `--to "db2:": invalid port`},
	}
	for _, c := range same {
		t.Run(c.name, func(t *testing.T) {
			_, one, code1 := run(t, nil, c.one...)
			_, old, code2 := run(t, nil, c.old...)
			if code1 != cli.ExitUsage || code2 != cli.ExitUsage || one != old {
				t.Fatalf("one name: exit %d %q; older name: exit %d %q; want both exit 2 and alike", code1, one, code2, old)
			}
			if line := strings.TrimSuffix(old, "\n"); strings.Contains(line, "\n") || !strings.Contains(line, c.want) {
				t.Fatalf("stderr %q, want one line containing %q", old, c.want)
			}
		})
	}

	// The load without a rate names the one name.
	if _, stderr, code := run(t, nil, "db", "load", "--dsn", pg); code != cli.ExitUsage || !strings.Contains(stderr, "--log-rate is required, e.g. --log-rate 20MB/s") {
		t.Fatalf("db load without a rate: exit %d, %q", code, stderr)
	}

	clash := []struct {
		name string
		args []string
		want string
	}{
		{"disk", []string{"disk", "--path", "/backup", "--on", "db2", "--to", "db3"}, "narrows: disk: --on db2 and --to db3: --on is --to's older name: give one\n"},
		{"db ping agent", []string{"db", "ping", "--dsn", pg, "--to", "db3", "--agent", "db2"}, "narrows: db ping: --to db3 and --agent db2: --agent is --to's older name: give one\n"},
		{"db ping size", []string{"db", "ping", "--dsn", pg, "--payload", "10", "--request", "20"}, "narrows: db ping: --payload 10 and --request 20: --payload is --request's older name: give one\n"},
		{"plan chatty", []string{"plan", "chatty", "--assume", "rtt=1ms", "--payload", "10", "--request", "20"}, "narrows: plan chatty: --payload 10 and --request 20: --payload is --request's older name: give one\n"},
		{"db load", []string{"db", "load", "--dsn", pg, "--rate", "1MB/s", "--log-rate", "2MB/s"}, "narrows: db load: --rate 1MB/s and --log-rate 2MB/s: --rate is --log-rate's older name: give one\n"},
	}
	for _, c := range clash {
		t.Run("clash "+c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, nil, c.args...)
			if code != cli.ExitUsage || stderr != c.want || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, c.want)
			}
		})
	}

	help := []struct {
		args        []string
		one, older  string
		description string
	}{
		{[]string{"help", "disk"}, "to", "on", "measure the storage of the agent"},
		{[]string{"disk", "--help"}, "to", "on", "measure the storage of the agent"},
		{[]string{"db", "ping", "--help"}, "to", "agent", "an agent (narrows serve) beside the database"},
		{[]string{"db", "ping", "--help"}, "request", "payload", "send SELECT '<N characters>'"},
		{[]string{"plan", "chatty", "--help"}, "request", "payload", "with --dsn: send SELECT"},
		{[]string{"db", "load", "--help"}, "log-rate", "rate", "the log generation rate to hold"},
	}
	for _, c := range help {
		t.Run(strings.Join(c.args, " ")+" --"+c.one, func(t *testing.T) {
			out, stderr, code := run(t, nil, c.args...)
			if code != cli.ExitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			lines := strings.Split(out, "\n")
			entries := 0
			for i, l := range lines {
				switch {
				case l == "  --"+c.one+" string":
					entries++
					if i+1 >= len(lines) || !strings.Contains(lines[i+1], c.description) ||
						!strings.HasSuffix(lines[i+1], "(also --"+c.older+", its older name)") {
						t.Errorf("the entry of --%s does not mention --%s: %q", c.one, c.older, lines[i+1:min(i+2, len(lines))])
					}
				case strings.HasPrefix(l, "  --"+c.one+" "):
					t.Errorf("--%s is listed as %q, want %q", c.one, l, "  --"+c.one+" string")
				case l == "  --"+c.older || strings.HasPrefix(l, "  --"+c.older+" "):
					t.Errorf("the older name has an entry of its own: %q", l)
				}
			}
			if entries != 1 {
				t.Errorf("--%s listed %d times, want once:\n%s", c.one, entries, out)
			}
		})
	}
	// --rate stays round trips per second in net rr and watch: a flag of
	// its own there, with no older name.
	for _, cmd := range [][]string{{"net", "rr", "--help"}, {"watch", "--help"}} {
		out, _, _ := run(t, nil, cmd...)
		if !strings.Contains(out, "\n  --rate float\n") || strings.Contains(out, "older name") {
			t.Errorf("%s: want --rate float and no older names:\n%s", strings.Join(cmd, " "), out)
		}
	}
}
