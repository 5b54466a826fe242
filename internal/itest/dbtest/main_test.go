package dbtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
	"github.com/narrows/narrows/internal/testenv"
)

var (
	pg       *dbserver.Postgres
	pgErr    error
	maria    *dbserver.MariaDB
	mariaErr error
)

func TestMain(m *testing.M) {
	// Starting the servers (initdb, a standby's base backup) keeps the
	// cores busy: on the machine's timing shares, as every test here is
	// (need).
	release, err := testbed.Hold(dbShare)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dbtest: %v\n", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Go(func() { pg, pgErr = dbserver.StartPostgres(ctx) })
	wg.Go(func() { maria, mariaErr = dbserver.StartMariaDB(ctx) })
	wg.Wait()
	cancel()
	release()
	fmt.Fprintf(os.Stderr, "dbtest: servers started in %s (postgres: %v, mariadb: %v)\n", time.Since(t0).Round(time.Millisecond), pgErr, mariaErr)
	code := m.Run()
	if pg != nil {
		pg.Close()
	}
	if maria != nil {
		maria.Close()
	}
	os.Exit(code)
}

// dbShare is how many of the machine's timing shares (testbed.Share) a
// test here holds: it drives a real server (loads, pgbench, a standby's
// replay) and holds figures to what it wrote in time: beside the
// experiments (a `go test ./...`) it has a core's worth of the machine.
const dbShare = 2

// need skips (fails under CI) unless the server started, and holds the
// test's timing shares for the rest of it.
func need(t *testing.T, name string, err error) {
	t.Helper()
	if err != nil {
		testenv.Need(t, testenv.DB, "%s could not start: %v", name, err)
		return
	}
	testbed.Share(t, dbShare)
}

func needPG(t *testing.T)    { t.Helper(); need(t, "PostgreSQL", pgErr) }
func needMaria(t *testing.T) { t.Helper(); need(t, "MariaDB", mariaErr) }

func TestServersUp(t *testing.T) {
	needPG(t)
	needMaria(t)
}
