package cli_test

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestHistoryBombRefused: a run in a real store whose intervals are a
// gzip of 1 GiB of zeros (1.3 MB) is refused by compare in one line that
// names the run and the limit, the process peaking far below the bomb
// (it read 1 GiB and peaked at 2.7 GB before, in 5 s); history still
// lists every run and compare still compares the good ones.
func TestHistoryBombRefused(t *testing.T) {
	a := itest.StartAgent(t, nil)
	dir := t.TempDir()
	env := []string{"NARROWS_HISTORY=" + dir}
	for range 3 {
		if r := itest.Run(t, 30*time.Second, env, "net", "rr", "--to", a.Addr, "--duration", "1s", "--interval", "100ms"); r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	io.CopyN(zw, zeros{}, 1<<30)
	zw.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE runs SET intervals = ? WHERE id = 2", z.Bytes()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	cmd := exec.Command(itest.Binary(t), "compare", "1", "2")
	cmd.Env = append(os.Environ(), "NARROWS_HISTORY="+dir, "NARROWS_NO_HISTORY=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code := cmd.ProcessState.ExitCode(); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "run 2 ") || !strings.Contains(lines[0], "64 MiB") {
		t.Fatalf("compare with the bomb: exit %d, stderr %q: want exit 2 and one line naming run 2 and 64 MiB", code, stderr.String())
	}
	t.Logf("compare refused the %d-byte bomb peaking at %d MiB resident: %s", z.Len(), peak>>20, lines[0])
	if peak > 256<<20 {
		t.Errorf("compare peaked at %d MiB resident refusing the bomb: it read past the 64 MiB limit", peak>>20)
	}
	if runs := historyRuns(t, dir); len(runs) != 3 {
		t.Errorf("history lists %d runs beside the bomb, want 3", len(runs))
	}
	if r := itest.Run(t, 30*time.Second, env, "compare", "1", "3"); r.Code != 0 || !strings.Contains(r.Stdout, "round trips") {
		t.Errorf("compare of the good runs: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
}
