//go:build linux

package wintest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// The test PostgreSQL starts beside the first tests, which make the Wine
// prefix meanwhile; TestDBPingFromWindows waits for it.
var (
	pgReady = make(chan struct{})
	pg      *dbserver.Postgres
	pgErr   error
)

func TestMain(m *testing.M) {
	go func() {
		defer close(pgReady)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pg, pgErr = dbserver.StartPostgres(ctx)
	}()
	code := m.Run()
	<-pgReady
	if pg != nil {
		pg.Close()
	}
	itest.CloseWine()
	os.Exit(code)
}

// TestVersion: narrows.exe starts under Wine and says what it is.
func TestVersion(t *testing.T) {
	w := itest.NewWine(t)
	r := w.Run(t, time.Minute, nil, "version")
	if r.Code != 0 || !regexpVersion.MatchString(r.Stdout) {
		t.Fatalf("narrows.exe version: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
