//go:build linux

package wintest

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed/dbserver"
	"github.com/narrows/narrows/internal/testenv"
)

// TestDBPingFromWindows: narrows.exe db ping measures round trips to a
// real PostgreSQL (the test's own, on loopback), keeps the password out
// of what it prints, and names a wrong password in one line, exit 2.
func TestDBPingFromWindows(t *testing.T) {
	w := itest.NewWine(t)
	<-pgReady
	if pgErr != nil {
		testenv.Need(t, testenv.DB, "PostgreSQL could not start: %v", pgErr)
	}
	dsn := pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword)
	r := w.Run(t, time.Minute, nil, "db", "ping", "--dsn", dsn, "--duration", "1s", "--json")
	if r.Code != 0 {
		t.Fatalf("narrows.exe db ping: exit %d\n%s", r.Code, r.Stderr)
	}
	_, sum := itest.Records(t, r.Stdout)
	p := itest.Obj(sum, "db_ping")
	if n, _ := itest.Num(p, "queries"); n < 10 {
		t.Errorf("narrows.exe db ping ran %v queries in 1 s, want at least 10:\n%s", n, r.Stdout)
	}
	if p50, _ := itest.Num(p, "rtt_p50_seconds"); p50 <= 0 || p50 > 0.5 {
		t.Errorf("db ping p50 %v s from Windows to loopback PostgreSQL:\n%s", p50, r.Stdout)
	}
	// No share of a round trip is more than all of it. Under Wine a TCP
	// connect costs more than a query's round trip (1.8 ms against 0.4
	// ms here), which once made the network "225%" of it.
	ns := itest.Obj(p, "network")
	for _, k := range []string{"network_share_low_ratio", "network_share_high_ratio"} {
		if v, ok := itest.Num(ns, k); !ok || v < 0 || v > 1 {
			t.Errorf("%s = %v: a share of the round trip must be within 0..1:\n%s", k, v, r.Stdout)
		}
	}
	for _, out := range []string{r.Stdout, r.Stderr} {
		if strings.Contains(out, dbserver.NarrowsPassword) {
			t.Fatalf("the password appears in narrows.exe's output:\n%s", out)
		}
	}

	bad := pg.DSN(pg.Primary, "narrows", "Wr0ng-Passw0rd-99")
	r = w.Run(t, time.Minute, nil, "db", "ping", "--dsn", bad, "--duration", "1s")
	if lines := ownLines(r.Stderr); r.Code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "password") ||
		strings.Contains(r.Stderr+r.Stdout, "Wr0ng-Passw0rd-99") {
		t.Errorf("a wrong password: exit %d, stderr %q; want exit 2, one line naming the password, not showing it", r.Code, r.Stderr)
	}
}
