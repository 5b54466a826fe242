//go:build unix

package dbtest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// TestLoadStopsDropTable: db load stopped by SIGHUP (a dropped SSH
// session), SIGTERM or its standard output closing (`| head -1`) drops
// its scratch table, as on SIGINT, and exits 128 + the signal's number.
// Before, SIGHUP and SIGPIPE killed the process and the table stayed.
func TestLoadStopsDropTable(t *testing.T) {
	needPG(t)
	super := open(t, pgSuper())
	cases := []struct {
		name, table string
		stop        func(cmd *exec.Cmd, stdout io.Closer)
		code        int
	}{
		{"SIGHUP", "narrows_sighup", func(cmd *exec.Cmd, _ io.Closer) { cmd.Process.Signal(syscall.SIGHUP) }, 129},
		{"SIGTERM", "narrows_sigterm", func(cmd *exec.Cmd, _ io.Closer) { cmd.Process.Signal(syscall.SIGTERM) }, 143},
		{"stdout closed (SIGPIPE)", "narrows_sigpipe", func(_ *exec.Cmd, stdout io.Closer) { stdout.Close() }, 141},
	}
	tables := func(name string) int {
		var n int
		if err := super.Conn.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_class WHERE relname = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(itest.Binary(t), "db", "load", "--dsn", pgDSN(), "--rate", "1MB/s", "--duration", "60s",
				"--interval", "200ms", "--table", c.table)
			stdout, _ := cmd.StdoutPipe()
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			t.Cleanup(func() {
				select {
				case <-done:
				default:
					cmd.Process.Kill()
					<-done
				}
			})
			rows := make(chan string, 100)
			read := make(chan struct{})
			go func() {
				defer close(read)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					rows <- sc.Text()
				}
			}()
			// Under way: the banner and two interval rows out.
			for range 3 {
				select {
				case <-rows:
				case <-time.After(30 * time.Second):
					t.Fatalf("no rows; stderr %s", errb.String())
				}
			}
			if n := tables(c.table); n != 1 {
				t.Fatalf("%d tables %s while loading, want 1", n, c.table)
			}
			c.stop(cmd, stdout)
			<-read
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not end the run; stderr %s", c.name, errb.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != c.code || !strings.HasPrefix(errb.String(), "narrows: stopped") {
				t.Fatalf("exit %d, stderr %q; want exit %d and why it stopped", code, errb.String(), c.code)
			}
			if n := tables(c.table); n != 0 {
				t.Fatalf("%s left the table %s behind", c.name, c.table)
			}
		})
	}
}
