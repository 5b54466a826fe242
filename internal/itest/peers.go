package itest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"

	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// SlapArgs are mariadb-slap's arguments for n queries of SELECT 1, one
// after another on one connection, as the narrows user to the MariaDB on
// this host's port (its password given apart: MYSQL_PWD, or -p after
// them; --no-defaults must come first).
func SlapArgs(port, n int) []string {
	return []string{"--no-defaults", "--protocol=tcp", "-h127.0.0.1", "-P" + strconv.Itoa(port),
		"-unarrows", "--create-schema=narrows", "--no-drop", "--concurrency=1", "--iterations=1",
		"--number-of-queries=" + strconv.Itoa(n), "--query=SELECT 1"}
}

// Slap is mariadb-slap sending n SELECT 1 one after another in one
// connection (--concurrency=1) to the MariaDB on 127.0.0.1:port as the
// narrows user: the C client library's round trips, the peer of db ping
// and narrows host against MariaDB. Run it, then read it with
// SlapSeconds. ctx ends it (killed).
func Slap(ctx context.Context, port, n int) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "mariadb-slap", SlapArgs(port, n)...)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+dbserver.NarrowsPassword)
	return cmd
}

// slapSeconds is mariadb-slap's timing line.
var slapSeconds = regexp.MustCompile(`Average number of seconds to run all queries: ([0-9.]+) seconds`)

// SlapSeconds is the time mariadb-slap's output says its queries took
// (its one connect included: a few ms against seconds).
func SlapSeconds(out []byte) (float64, error) {
	m := slapSeconds.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no timing line in mariadb-slap's output:\n%s", out)
	}
	secs, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || secs <= 0 {
		return 0, fmt.Errorf("mariadb-slap took %q s:\n%s", m[1], out)
	}
	return secs, nil
}
