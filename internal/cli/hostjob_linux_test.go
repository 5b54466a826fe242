//go:build linux

package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/cli"
)

// TestHostJobFails: narrows host -- COMMAND whose job fails ends the run
// (exit 1) naming the program, its status and its last words, and the
// report, still written, says the job, by its program's name only: the
// command line (a password in it here) appears nowhere.
func TestHostJobFails(t *testing.T) {
	out, stderr, code := run(t, nil, "host", "--json", "--", "sh", "-c", "echo 'FATAL: password authentication failed' >&2; exit 4", "Hunter2secret")
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d; stderr %q", code, cli.ExitFailed, stderr)
	}
	for _, want := range []string{"the job (sh) failed", "exit status 4", "FATAL: password authentication failed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q: want %q in it", stderr, want)
		}
	}
	if strings.Contains(out+stderr, "Hunter2secret") || strings.Contains(out+stderr, "exit 4") {
		t.Errorf("the job's command line in the output:\n%s\n%s", out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rep struct {
		Host struct {
			Job struct {
				Program string `json:"program"`
			} `json:"job"`
		} `json:"host"`
		Partial bool `json:"partial"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("the summary record: %v\n%s", err, out)
	}
	if rep.Host.Job.Program != "sh" || !rep.Partial {
		t.Errorf("summary %+v: want the job named sh, and the run partial", rep)
	}
}
