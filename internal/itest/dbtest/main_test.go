package dbtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Go(func() { pg, pgErr = dbserver.StartPostgres(ctx) })
	wg.Go(func() { maria, mariaErr = dbserver.StartMariaDB(ctx) })
	wg.Wait()
	cancel()
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

func need(t *testing.T, name string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	testenv.Need(t, testenv.DB, "%s could not start: %v", name, err)
}

func needPG(t *testing.T)    { t.Helper(); need(t, "PostgreSQL", pgErr) }
func needMaria(t *testing.T) { t.Helper(); need(t, "MariaDB", mariaErr) }

func TestServersUp(t *testing.T) {
	needPG(t)
	needMaria(t)
}
