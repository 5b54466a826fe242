package dbtest

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// TestHostileDSN: a DSN whose password holds an unencoded '/', '#', '?' or
// '@', or whose secret sits in a parameter spelled in another case, is
// refused in one line (exit 2) that says how to encode the password; no
// piece of any secret is printed, and narrows dials no host read from the
// middle of a password. It needs no database server.
func TestHostileDSN(t *testing.T) {
	// A listener stands where a misread password would send narrows.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialed atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			c.Close()
		}
	}()
	here := ln.Addr().String()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	const encode = "%2F"
	cases := []struct {
		name, dsn string
		pieces    []string // every piece of the secret that must not appear
		want      string
	}{
		{"slash and hash", "postgres://u:Kq7w/Slv9#Zr4m@" + here + "/db", []string{"Kq7w", "Slv9", "Zr4m"}, encode},
		{"slash, read as another host", "mysql://u:Pq3x@" + here + "/Wx5r@" + closedAddr + "/x", []string{"Pq3x", "Wx5r"}, encode},
		{"slash, postgres reads another host", "postgres://u:Lp2k@" + here + "/Mn3b@" + closedAddr + "/x", []string{"Lp2k", "Mn3b"}, encode},
		{"question mark", "postgres://u:Ab1c?Cd2e@" + here + "/db", []string{"Ab1c", "Cd2e"}, encode},
		{"hash alone", "mariadb://u:Ef3g#Gh4i@" + here + "/db", []string{"Ef3g", "Gh4i"}, encode},
		{"no scheme, slash", "u:Qw8e/Rt6y@" + here, []string{"Qw8e", "Rt6y"}, "no scheme"},
		{"key=value, Password", "host=127.0.0.1 user=u Password=Zx8Cv6Bn", []string{"Zx8Cv6Bn"}, "no scheme"},
		{"bad escape", "postgres://u:Hy5%zzUi7o@" + here + "/db", []string{"Hy5", "Ui7o", "%zz"}, encode},
		{"sslpassword", "postgres://narrows@" + closedAddr + "/postgres?sslmode=disable&sslpassword=Gh5Jk7Lm", []string{"Gh5Jk7Lm"}, "cannot reach"},
		{"Password parameter", "sqlserver://sa@" + closedAddr + "?database=x&Password=Vb4Nm2Qa", []string{"Vb4Nm2Qa"}, "cannot reach"},
	}
	for _, c := range cases {
		for _, how := range []string{"flag", "env", "load"} {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				before := dialed.Load()
				args := []string{"db", "ping", "--dsn", c.dsn, "--duration", "1s", "--timeout", "2s"}
				var env []string
				switch how {
				case "env":
					args, env = []string{"db", "ping", "--duration", "1s", "--timeout", "2s"}, []string{"NARROWS_DSN=" + c.dsn}
				case "load":
					args = []string{"db", "load", "--dsn", c.dsn, "--rate", "1MB/s", "--duration", "1s", "--timeout", "2s"}
				}
				r := itest.Run(t, 30*time.Second, env, args...)
				for _, p := range c.pieces {
					if strings.Contains(r.Stdout+r.Stderr, p) {
						t.Fatalf("%q of the password appears: stdout %q stderr %q", p, r.Stdout, r.Stderr)
					}
				}
				line := strings.TrimSuffix(r.Stderr, "\n")
				if r.Code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, c.want) {
					t.Fatalf("exit %d, stderr %q: want exit 2 and one line containing %q", r.Code, r.Stderr, c.want)
				}
				if n := dialed.Load() - before; n != 0 {
					t.Fatalf("narrows dialed %s %d times: a host read from the password", here, n)
				}
				t.Log(line)
			})
		}
	}
}
