// Package dbload generates a steady stream of transaction log at a chosen
// rate, so a DBA can load a replication link before go-live while `db
// repl` watches it. It inserts incompressible rows into a scratch table it
// creates (marked as its own) and drops at the end, and paces itself on the
// log position the server reports (WAL LSN, binary log position, 'Log
// Bytes Flushed/sec'), so --rate is the server's log rate, not a guess from
// payload sizes. It refuses to touch a table of that name that is not its
// own. This is the only db probe that writes.
package dbload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
)

// Marker is the comment narrows puts on its scratch table: a table of the
// same name without it is someone else's, and is never touched.
const Marker = "narrows db load scratch table: created by narrows, dropped when it ends"

// DefaultTable is the scratch table's name.
const DefaultTable = "narrows_load"

// truncateEvery bounds the scratch table's size on disk.
const truncateEvery = 512 << 20

// Config is what to generate.
type Config struct {
	Rate     float64       // log bytes per second
	Duration time.Duration // 0: until interrupted
	Interval time.Duration
	Table    string
	RowBytes int64
	Timeout  time.Duration
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// ValidTable says whether name can be used as the scratch table's name.
func ValidTable(name string) bool { return identRE.MatchString(name) }

// engine is one engine's SQL on the scratch table.
type engine interface {
	// preflight refuses a server that cannot take the load (read-only, or
	// blocked) before anything is created.
	preflight(ctx context.Context, c *dbconn.Conn) error
	// owner looks up the table the name leads to exactly as the engine's
	// statements will: whether it exists and whether it is narrows' own
	// (a leftover, then remembered as the table to drop).
	owner(ctx context.Context, c *dbconn.Conn) (exists, ours bool, err error)
	// create makes the table with its marker.
	create(ctx context.Context, c *dbconn.Conn) error
	// drop, truncate and insert act only on the table narrows created (or
	// its own leftover), and return errNotOurs when the name leads
	// elsewhere.
	drop(ctx context.Context, c *dbconn.Conn) error
	truncate(ctx context.Context, c *dbconn.Conn) error
	insert(ctx context.Context, c *dbconn.Conn, rows [][]byte) error
	// logBytes is the server's log position in bytes; measure names it.
	logBytes(ctx context.Context, c *dbconn.Conn) (int64, error)
	measure() string
}

func engineFor(e dbconn.Engine, table string) engine {
	switch e {
	case dbconn.Postgres:
		return newPG(table)
	case dbconn.MySQL:
		return &myEngine{table: table}
	default:
		return &msEngine{table: table}
	}
}

// Run generates log until the duration is over or ctx is done, then drops
// the table. Errors before the first row are dbconn.Errors a person can fix.
func Run(ctx context.Context, d *dbconn.DSN, cfg Config, emit probe.Emit) (*result.DBLoad, error) {
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.RowBytes <= 0 {
		cfg.RowBytes = 1000
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	res := &result.DBLoad{Engine: string(d.Engine), Table: cfg.Table, Gaps: []result.Gap{},
		Config: result.DBLoadConfig{Rate: cfg.Rate, Duration: result.Seconds(cfg.Duration), Interval: result.Seconds(cfg.Interval), RowBytes: cfg.RowBytes}}
	if d.Engine == dbconn.MySQL && d.Database == "" {
		return res, &dbconn.Error{Kind: dbconn.BadDSN, Msg: fmt.Sprintf("db load: %s: name a database for the scratch table: mysql://USER:PASSWORD@HOST:3306/DATABASE", d.Redacted)}
	}
	eng := engineFor(d.Engine, cfg.Table)
	conn, err := dbconn.Open(ctx, d, dbconn.Options{Timeout: cfg.Timeout, Prepared: true})
	if err != nil {
		return res, err
	}
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	octx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	err = eng.preflight(octx, conn)
	var exists, ours bool
	if err == nil {
		exists, ours, err = eng.owner(octx, conn)
	}
	if err == nil && exists {
		if !ours {
			cancel()
			return res, dbconn.Refusedf("db load: table %s already exists in %s and is not narrows' own scratch table (no narrows marker in its comment): narrows never writes to a table it did not create; choose another name with --table", cfg.Table, d.Redacted)
		}
		// Left over from a run that could not clean up: it is ours.
		err = eng.drop(octx, conn)
	}
	if err == nil {
		err = eng.create(octx, conn)
	}
	cancel()
	if err != nil {
		what := "create the scratch table " + cfg.Table
		if errors.Is(err, errNotOurs) {
			err = dbconn.Refusedf("db load: %s: table %s in %s changed hands while narrows removed its leftover: narrows leaves it alone; choose another name with --table", what, cfg.Table, d.Redacted)
		}
		err = dbconn.Classify(d, what, blocked(d, what, err, cfg.Timeout))
		// A create whose commit timed out may still have taken effect:
		// its table is marked, and dropped here if the server lets it.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
		dropTable(dctx, d, eng, conn, cfg.Timeout)
		dcancel()
		if dbconn.Is(err, dbconn.Permission) {
			return res, fmt.Errorf("%w (db load needs the right to create a table in the DSN's database and schema)", err)
		}
		return res, err
	}
	res.Measure = eng.measure()
	defer func() {
		// Always drop the table, even when interrupted (from a new session
		// when the signal cut the one it has off mid-statement).
		dctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
		defer cancel()
		res.Dropped = dropTable(dctx, d, eng, conn, cfg.Timeout)
	}()

	g := &gen{cfg: cfg, eng: eng, emit: emit, rng: rand.NewChaCha8([32]byte{'n', 'a', 'r', 'r', 'o', 'w', 's'}),
		all: metric.NewHistogram(), cur: metric.NewHistogram()}
	runErr := g.run(ctx, d, &conn, res)
	res.Rows, res.LogBytes, res.PayloadBytes, res.Commits = g.rows, g.logTotal, g.payload, g.commits
	if g.all.Count() > 0 {
		l := result.LatenciesOf(g.all)
		res.CommitLatency = &l
	}
	res.Duration = result.Seconds(g.active)
	if g.active > 0 {
		res.Rate = float64(g.logTotal) / g.active.Seconds()
	}
	if ctx.Err() != nil {
		res.Stopped = probe.Interrupted
		return res, nil
	}
	return res, runErr
}

type gen struct {
	cfg               Config
	eng               engine
	emit              probe.Emit
	rng               *rand.ChaCha8
	rows              int64
	logTotal, payload int64
	active            time.Duration
	sinceTruncate     int64
	// commits counts the INSERTs (each commits on its own); all and cur
	// hold their latencies for the run and for the current interval.
	commits  int64
	all, cur *metric.Histogram
}

// run paces inserts on the server's log position.
func (g *gen) run(ctx context.Context, d *dbconn.DSN, connp **dbconn.Conn, res *result.DBLoad) error {
	cfg := g.cfg
	rowsPerBatch := int(max(1, min(cfg.Rate/50/float64(cfg.RowBytes), 500)))
	batch := make([][]byte, rowsPerBatch)
	buf := make([]byte, int64(rowsPerBatch)*cfg.RowBytes)
	for i := range batch {
		batch[i] = buf[int64(i)*cfg.RowBytes : int64(i+1)*cfg.RowBytes]
	}
	runStart := time.Now()
	var end time.Time
	if cfg.Duration > 0 {
		end = runStart.Add(cfg.Duration)
	}
	over := func() bool { return ctx.Err() != nil || !end.IsZero() && !time.Now().Before(end) }
	for !over() {
		conn := *connp
		segStart := time.Now()
		base, err := g.position(ctx, conn, 0)
		var segLog, lastLog int64
		var lastRows int64
		lastReport := segStart
		for err == nil && !over() {
			now := time.Now()
			target := cfg.Rate * now.Sub(segStart).Seconds()
			if float64(segLog) < target {
				g.rng.Read(buf) // every row of the batch, fresh and incompressible
				t0 := time.Now()
				ictx, cancel := context.WithTimeout(ctx, cfg.Timeout)
				err = g.eng.insert(ictx, conn, batch)
				cancel()
				if err != nil {
					break
				}
				lat := time.Since(t0)
				g.all.Record(lat)
				g.cur.Record(lat)
				g.commits++
				g.rows += int64(len(batch))
				g.payload += int64(len(buf))
				g.sinceTruncate += int64(len(buf))
				var pos int64
				if pos, err = g.position(ctx, conn, segLog+int64(len(buf))); err != nil {
					break
				}
				segLog = pos - base
				if g.sinceTruncate > truncateEvery {
					if err = g.eng.truncate(ctx, conn); err != nil {
						break
					}
					g.sinceTruncate = 0
				}
			} else {
				wait := time.Duration((float64(segLog) - target) / cfg.Rate * float64(time.Second))
				time.Sleep(min(max(wait, time.Millisecond), 50*time.Millisecond))
			}
			if now := time.Now(); now.Sub(lastReport) >= cfg.Interval {
				iv := result.NewInterval(result.ProbeDBLoad, lastReport.Sub(runStart), now.Sub(runStart))
				iv.Load = &result.LoadInterval{LogBytes: segLog - lastLog, Rows: g.rows - lastRows,
					Rate: float64(segLog-lastLog) / now.Sub(lastReport).Seconds(), Commits: int64(g.cur.Count())}
				if g.cur.Count() > 0 {
					p50, p99 := result.Seconds(g.cur.Quantile(0.5)), result.Seconds(g.cur.Quantile(0.99))
					iv.Load.CommitP50, iv.Load.CommitP99 = &p50, &p99
				}
				g.cur.Reset()
				g.emit(iv)
				lastLog, lastRows, lastReport = segLog, g.rows, now
			}
		}
		g.logTotal += segLog
		g.active += time.Since(segStart)
		if err == nil || over() {
			return nil
		}
		if errors.Is(err, errNotOurs) {
			return dbconn.Refusedf("db load: table %s in %s was replaced mid-run by a table narrows did not create: narrows stopped writing and leaves that table alone", cfg.Table, d.Redacted)
		}
		if err = blocked(d, "insert into "+cfg.Table, err, cfg.Timeout); dbconn.Is(err, dbconn.Blocked) {
			return err
		}
		if dbconn.ServerError(err) {
			return dbconn.Classify(d, "insert into "+cfg.Table, err)
		}
		// Lost the session: mark the gap, reconnect with backoff.
		gap := result.Gap{Of: "session", Start: result.Seconds(time.Since(runStart)), Reason: d.Reason(err)}
		giv := result.NewInterval(result.ProbeDBLoad, lastReport.Sub(runStart), time.Since(runStart))
		giv.Load = &result.LoadInterval{Gap: &gap}
		g.emit(giv)
		conn.Close()
		*connp, gap.Retries, err = dbconn.Reopen(ctx, d, dbconn.Options{Timeout: cfg.Timeout, Prepared: true},
			500*time.Millisecond, 10*time.Second, over)
		if err != nil {
			gap.Reason = d.Reason(err)
		}
		e := result.Seconds(time.Since(runStart))
		gap.End = &e
		res.Gaps = append(res.Gaps, gap)
		if *connp == nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("db load: lost the session and could not reconnect: %s", gap.Reason)
		}
		giv = result.NewInterval(result.ProbeDBLoad, e.D(), e.D())
		giv.Load = &result.LoadInterval{Gap: &gap}
		g.emit(giv)
	}
	return nil
}

// dropTable drops narrows' table on c, or on a session of its own when c
// is gone or lost; it says whether the table is gone.
func dropTable(ctx context.Context, d *dbconn.DSN, eng engine, c *dbconn.Conn, timeout time.Duration) bool {
	if c != nil && eng.drop(ctx, c) == nil {
		return true
	}
	c2, err := dbconn.Open(ctx, d, dbconn.Options{Timeout: timeout})
	if err != nil {
		return false
	}
	defer c2.Close()
	return eng.drop(ctx, c2) == nil
}

// blocked explains a statement that timed out: when every commit on the
// server waits for a synchronous standby that is not there, it says so
// (asked on a session of its own: the one that timed out is lost).
// Otherwise err is returned as it is.
func blocked(d *dbconn.DSN, what string, err error, timeout time.Duration) error {
	if d.Engine != dbconn.Postgres || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, cerr := dbconn.Open(ctx, d, dbconn.Options{Timeout: timeout})
	if cerr != nil {
		return err
	}
	defer c.Close()
	why, qerr := pgSyncBlocked(ctx, c)
	if qerr != nil || why == "" {
		return err
	}
	return &dbconn.Error{Kind: dbconn.Blocked, Err: err, Msg: fmt.Sprintf("db load: %s: no answer within %s: %s", what, timeout, why)}
}

// position reads the log position, or counts payload when the server does
// not tell it (fallback: the bytes narrows has sent).
func (g *gen) position(ctx context.Context, c *dbconn.Conn, payloadSoFar int64) (int64, error) {
	if g.eng.measure() == "payload" {
		return payloadSoFar, nil
	}
	qctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	return g.eng.logBytes(qctx, c)
}
