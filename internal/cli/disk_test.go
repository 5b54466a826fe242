package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/cli"
)

// TestDiskBadInput: every mistake with `narrows disk` gets one line naming
// what is wrong and exit code 2, and no test file is left anywhere.
func TestDiskBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "datafile.mdf")
	os.WriteFile(file, []byte("x"), 0o600)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no path", []string{"disk"}, "--path is required"},
		{"path and device", []string{"disk", "--path", dir, "--device", "/dev/null"}, "--path and --device: choose one"},
		{"unknown profile", []string{"disk", "--path", dir, "--profile", "data,oltp"}, `--profile "oltp"`},
		{"custom flags with another profile", []string{"disk", "--path", dir, "--profile", "data", "--rw", "write"}, "--rw shape --profile custom"},
		{"unknown rw", []string{"disk", "--path", dir, "--rw", "scan"}, `--rw "scan"`},
		{"mix without mix", []string{"disk", "--path", dir, "--rw", "randread", "--mix", "50"}, "--mix applies to --rw mix"},
		{"block not for O_DIRECT", []string{"disk", "--path", dir, "--block", "6000"}, "O_DIRECT needs a multiple of 4K"},
		{"malformed block", []string{"disk", "--path", dir, "--block", "8Q"}, `--block: invalid size "8Q"`},
		{"fdatasync at depth", []string{"disk", "--path", dir, "--rw", "write", "--sync", "fdatasync", "--qd", "8"}, "use --qd 1"},
		{"sync on reads", []string{"disk", "--path", dir, "--sync", "dsync"}, "a sync mode needs writes"},
		{"unknown sync", []string{"disk", "--path", dir, "--rw", "write", "--sync", "always"}, `--sync "always"`},
		{"qd too deep", []string{"disk", "--path", dir, "--qd", "1000"}, "--qd 1000"},
		{"tiny file", []string{"disk", "--path", dir, "--size", "10K"}, "--size 10K: use at least 1M"},
		{"file smaller than the threads' blocks", []string{"disk", "--path", dir, "--profile", "custom", "--block", "2M", "--threads", "4", "--size", "4M"}, "too small"},
		{"unknown engine", []string{"disk", "--path", dir, "--engine", "aio"}, `--engine "aio"`},
		{"zero duration", []string{"disk", "--path", dir, "--duration", "0"}, "must be more than zero"},
		{"short interval", []string{"disk", "--path", dir, "--interval", "1ms"}, "at least 10ms"},
		{"missing directory", []string{"disk", "--path", filepath.Join(dir, "nope")}, "does not exist"},
		{"a file, not a directory", []string{"disk", "--path", file}, "is not a directory"},
		{"file larger than the free space", []string{"disk", "--path", dir, "--size", "1000T"}, "narrows keeps at least 10% free"},
		{"a character device as --device", []string{"disk", "--device", "/dev/null"}, "is not a block device"},
		{"log on a device", []string{"disk", "--device", "/dev/null", "--profile", "log"}, "a device is only ever read"},
		{"custom write on a device", []string{"disk", "--device", "/dev/null", "--rw", "randwrite"}, "a device is only ever read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := run(t, nil, c.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit code %d, want 2; stderr %q", code, stderr)
			}
			last := strings.TrimSuffix(stderr, "\n")
			if strings.Contains(last, "\n") || !strings.Contains(last, c.want) || !strings.HasPrefix(last, "narrows: ") {
				t.Fatalf("stderr %q, want one line containing %q", stderr, c.want)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%s holds %d entries, want only datafile.mdf", dir, len(entries))
	}
	if b, _ := os.ReadFile(file); string(b) != "x" {
		t.Fatal("the file given as --path changed")
	}
}

func TestDiskHelp(t *testing.T) {
	out, _, code := run(t, nil, "disk", "--help")
	for _, want := range []string{"-path", "-profile", "-buffered", "-device", "-rw", "-sync", "-engine"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("help: code %d, no %q in %q", code, want, out)
		}
	}
}
