package dbtest

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// TestPasswordIsACommonWord: a wrong password that is a word the server's
// message or narrows' own sentence uses ("wrong", "password", "user") is
// hidden where the DSN shows it and nowhere else: the server's words and
// narrows' stand whole. Before, the password was replaced wherever it
// occurred as a string, and with "wrong" the line read `xxxxx user name or
// password for user "app"`: garbled, and the gap told the password.
func TestPasswordIsACommonWord(t *testing.T) {
	needPG(t)
	needMaria(t)
	for _, pw := range []string{"wrong", "password", "user"} {
		cases := []struct {
			name, dsn string
			want      []string // in the one line, as written
			masks     int      // how many times the mask stands in it
		}{
			{"postgres", strings.Replace(pgDSN(), "narrows:"+dbserver.NarrowsPassword, "narrows:"+pw, 1),
				[]string{`wrong user name or password for user "narrows"`, `password authentication failed for user "narrows" (SQLSTATE 28P01)`, "postgres://narrows:xxxxx@127.0.0.1:"}, 1},
			{"mariadb", strings.Replace(mySource(), "narrows:"+dbserver.NarrowsPassword, "narrows:"+pw, 1),
				[]string{`wrong user name or password for user "narrows"`, `Access denied for user 'narrows'@'127.0.0.1' (using password: YES) (error 1045)`, "mysql://narrows:xxxxx@127.0.0.1:"}, 1},
			// pgx echoes the DSN it cannot use (its own redaction), beside
			// narrows' redacted DSN.
			{"postgres echoed by the driver", strings.Replace(strings.Replace(pgDSN(), "narrows:"+dbserver.NarrowsPassword, "narrows:"+pw, 1), "sslmode=disable", "sslmode=bogus", 1),
				[]string{"cannot parse `postgres://narrows:xxxxx@127.0.0.1:", "sslmode is invalid"}, 2},
		}
		for _, c := range cases {
			t.Run(pw+"/"+c.name, func(t *testing.T) {
				if !strings.Contains(c.dsn, "narrows:"+pw+"@") {
					t.Fatalf("the test's DSN %q does not carry the password %q", c.dsn, pw)
				}
				r := itest.Run(t, 60*time.Second, nil, "db", "ping", "--dsn", c.dsn, "--count", "5")
				line := strings.TrimSuffix(r.Stderr, "\n")
				if r.Code != 2 || strings.Contains(line, "\n") {
					t.Fatalf("exit %d, stderr %q: want exit 2 and one line", r.Code, r.Stderr)
				}
				for _, w := range c.want {
					if !strings.Contains(line, w) {
						t.Errorf("the line lacks %q:\n%s", w, line)
					}
				}
				if n := strings.Count(line, dbconn.Mask); n != c.masks {
					t.Errorf("the mask stands %d times, want %d (the DSN's password only):\n%s", n, c.masks, line)
				}
				if strings.Contains(line, ":"+pw+"@") || strings.Contains(line, "password="+pw) {
					t.Errorf("the password shows in a DSN:\n%s", line)
				}
				t.Log(line)
			})
		}
	}
}
