// Package dbload generates a steady stream of transaction log at a chosen
// rate, so a DBA can load a replication link before go-live while `db
// repl` watches it. It inserts incompressible rows into a scratch table it
// creates (marked as its own) and drops at the end, from one session or
// several (each its own connection and commits, the rate shared), and
// paces itself on the log position the server reports (WAL LSN, binary
// log position, 'Log Bytes Flushed/sec'), so --log-rate is the server's log
// rate, not a guess from payload sizes. It refuses to touch a table of
// that name that is not its own. This is the only db probe that writes.
package dbload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"sync/atomic"
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
	Rate     float64       // log bytes per second, all sessions together
	Duration time.Duration // 0: until interrupted
	Interval time.Duration
	Table    string
	RowBytes int64
	Timeout  time.Duration
	// Sessions is how many sessions insert at once, each on its own
	// connection, sharing the rate and the table (0: one).
	Sessions int
	// RowsPerCommit fixes how many rows each commit inserts; 0: narrows
	// chooses (see RowsPerCommit).
	RowsPerCommit int64
}

// Bounds of a commit.
const (
	// CommitsPerSecond is how often a session commits when narrows chooses
	// the commit's size: often enough for a smooth rate, seldom enough
	// that a commit's fixed cost (a round trip, a log flush) stays small
	// beside its rows.
	CommitsPerSecond = 50
	// MaxRowsPerCommit bounds a commit's rows: one parameter per row, and
	// SQL Server takes at most 2,100 parameters in a statement.
	MaxRowsPerCommit = 2000
	// MaxCommitBytes bounds a commit's payload: MySQL's default
	// max_allowed_packet is 16 MiB.
	MaxCommitBytes = 16 << 20
	// autoCommitBytes bounds the payload of a commit narrows sizes.
	autoCommitBytes = 4 << 20
	autoMaxRows     = 500
)

// RowsPerCommit is the commit narrows chooses: one INSERT of enough rows
// that each session commits about CommitsPerSecond times a second at its
// share of the rate, at least one row, at most 500 rows or 4 MiB.
func RowsPerCommit(rate float64, sessions int, rowBytes int64) int64 {
	n := int64(rate / float64(max(sessions, 1)) / CommitsPerSecond / float64(rowBytes))
	return max(1, min(n, autoMaxRows, autoCommitBytes/rowBytes))
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
	// session is the engine for one more session on the table narrows
	// created: the same table, checked the same way, with statements of
	// its own.
	session() engine
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
	cfg.Sessions = max(cfg.Sessions, 1)
	rows := cfg.RowsPerCommit
	if rows <= 0 {
		rows = RowsPerCommit(cfg.Rate, cfg.Sessions, cfg.RowBytes)
	}
	res := &result.DBLoad{Engine: string(d.Engine), Table: cfg.Table, Gaps: []result.Gap{}, Sessions: []result.LoadSession{},
		RowsPerCommit: rows, CommitPayloadBytes: rows * cfg.RowBytes,
		Config: result.DBLoadConfig{Rate: cfg.Rate, Duration: result.Seconds(cfg.Duration), Interval: result.Seconds(cfg.Interval), RowBytes: cfg.RowBytes,
			Sessions: cfg.Sessions, RowsPerCommit: cfg.RowsPerCommit}}
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

	// Every session opens before the first row: a server that takes no
	// more connections is told now, not as a gap.
	ss := []*session{{id: 1, conn: conn, eng: eng.session()}}
	for i := 2; i <= cfg.Sessions; i++ {
		c, err := dbconn.Open(ctx, d, dbconn.Options{Timeout: cfg.Timeout, Prepared: true})
		if err != nil {
			for _, s := range ss[1:] {
				s.conn.Close()
			}
			if ctx.Err() != nil {
				res.Stopped = probe.Interrupted
				return res, nil
			}
			return res, fmt.Errorf("db load: session %d of %d: %w", i, cfg.Sessions, err)
		}
		ss = append(ss, &session{id: i, conn: c, eng: eng.session()})
	}
	l := newLoad(cfg, d, rows, emit)
	runErr := l.run(ctx, ss)
	for _, s := range ss[1:] {
		if s.conn != nil {
			s.conn.Close()
		}
	}
	conn = ss[0].conn // the first session's, maybe reopened; dropTable uses it
	l.summary(res, ss)
	if ctx.Err() != nil {
		res.Stopped = probe.Interrupted
		return res, nil
	}
	return res, runErr
}

// load is what the sessions share: the pace, the counts, the output.
type load struct {
	cfg  Config
	d    *dbconn.DSN
	rows int64 // per commit

	mu   sync.Mutex
	emit probe.Emit
	p    pacer
	// all and cur are every commit's latency, for the run and for the
	// interval under way; commits and rows count the interval's.
	all, cur     *metric.Histogram
	ivRows       int64
	reported     int64         // the log counted up to the last interval record
	reportedDown time.Duration // and the time without a connection
	gaps         []result.Gap

	sinceTruncate atomic.Int64
	truncating    atomic.Bool
}

func newLoad(cfg Config, d *dbconn.DSN, rows int64, emit probe.Emit) *load {
	return &load{cfg: cfg, d: d, rows: rows, emit: emit, all: metric.NewHistogram(), cur: metric.NewHistogram(), p: pacer{rate: cfg.Rate}}
}

// session is one connection inserting.
type session struct {
	id   int
	conn *dbconn.Conn
	eng  engine
	// Its own counts; guarded by load.mu.
	rows, payload, commits int64
	lat                    *metric.Histogram
}

// run starts the sessions and the reporter, and waits for them: the
// first session that fails for good stops the others.
func (l *load) run(ctx context.Context, ss []*session) error {
	start := time.Now()
	var end time.Time
	if l.cfg.Duration > 0 {
		end = start.Add(l.cfg.Duration)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	over := func() bool { return rctx.Err() != nil || !end.IsZero() && !time.Now().Before(end) }
	l.p.start(start)
	var wg sync.WaitGroup
	errs := make([]error, len(ss))
	for i, s := range ss {
		s.lat = metric.NewHistogram()
		wg.Go(func() {
			if errs[i] = l.session(rctx, s, i, over); errs[i] != nil {
				stop()
			}
		})
	}
	// The reporter: one record per --interval on a fixed grid from the
	// start, and the last, shorter one when the load ends, so that a 25 s
	// run at 1 s intervals has 25 rows.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	at := func() time.Duration { // now, since the start; a run on time ends at its duration
		if now := time.Since(start); end.IsZero() || now < l.cfg.Duration {
			return now
		}
		return l.cfg.Duration
	}
	last := time.Duration(0)
wait:
	for {
		select {
		case <-t.C:
			if now := at(); now > last {
				l.report(last, now)
				last = now
			}
		case <-done:
			break wait
		}
	}
	if now := at(); now > last {
		l.report(last, now)
	}
	l.p.stop(time.Now())
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// report emits the interval from..to (since the start).
func (l *load) report(from, to time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	logged, down := l.p.log(), l.p.downBy(time.Now())
	iv := result.NewInterval(result.ProbeDBLoad, from, to)
	iv.Load = &result.LoadInterval{LogBytes: logged - l.reported, Rows: l.ivRows, Commits: int64(l.cur.Count())}
	// The rate is over the time some session was connected: it never
	// spans a gap.
	if span := to - from - (down - l.reportedDown); span > 0 {
		iv.Load.Rate = float64(iv.Load.LogBytes) / span.Seconds()
	}
	if l.cur.Count() > 0 {
		p50, p99 := result.Seconds(l.cur.Quantile(0.5)), result.Seconds(l.cur.Quantile(0.99))
		iv.Load.CommitP50, iv.Load.CommitP99 = &p50, &p99
	}
	l.all.Merge(l.cur)
	l.cur.Reset()
	l.reported, l.reportedDown, l.ivRows = logged, down, 0
	l.emit(iv)
}

// session inserts on one connection until over, reconnecting (and
// marking the gap) when its connection is lost.
func (l *load) session(ctx context.Context, s *session, idx int, over func() bool) error {
	cfg := l.cfg
	rng := rand.NewChaCha8([32]byte{'n', 'a', 'r', 'r', 'o', 'w', 's', byte(s.id), byte(s.id >> 8)})
	batch := make([][]byte, l.rows)
	buf := make([]byte, l.rows*cfg.RowBytes)
	for i := range batch {
		batch[i] = buf[int64(i)*cfg.RowBytes : int64(i+1)*cfg.RowBytes]
	}
	n := int64(len(buf))
	for !over() {
		pos, err := l.position(ctx, s)
		if err == nil {
			l.p.connect(time.Now(), pos)
		}
		for err == nil && !over() {
			if wait := l.p.take(time.Now(), n); wait > 0 {
				time.Sleep(wait)
				continue
			}
			rng.Read(buf) // every row of the batch, fresh and incompressible
			t0 := time.Now()
			ictx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			err = s.eng.insert(ictx, s.conn, batch)
			cancel()
			if err != nil {
				l.p.release(n)
				break
			}
			l.committed(s, time.Since(t0), n)
			if pos, err = l.position(ctx, s); err != nil {
				l.p.release(n)
				break
			}
			l.p.done(n, pos)
			if l.sinceTruncate.Add(n) > truncateEvery && l.truncating.CompareAndSwap(false, true) {
				err = s.eng.truncate(ctx, s.conn)
				l.sinceTruncate.Store(0)
				l.truncating.Store(false)
			}
		}
		l.p.disconnect(time.Now())
		if err == nil || over() {
			return nil
		}
		if errors.Is(err, errNotOurs) {
			return dbconn.Refusedf("db load: table %s in %s was replaced mid-run by a table narrows did not create: narrows stopped writing and leaves that table alone", cfg.Table, l.d.Redacted)
		}
		if err = blocked(l.d, "insert into "+cfg.Table, err, cfg.Timeout); dbconn.Is(err, dbconn.Blocked) {
			return err
		}
		if dbconn.ServerError(err) {
			return dbconn.Classify(l.d, "insert into "+cfg.Table, err)
		}
		if err = l.reconnect(ctx, s, err, over); err != nil || s.conn == nil {
			return err
		}
	}
	return nil
}

// reconnect replaces a lost session's connection, with backoff, and
// marks the gap; s.conn is nil when it gave up.
func (l *load) reconnect(ctx context.Context, s *session, cause error, over func() bool) error {
	of := "session"
	if l.cfg.Sessions > 1 {
		of = fmt.Sprintf("session %d", s.id)
	}
	start := l.p.since()
	gap := result.Gap{Of: of, Start: result.Seconds(start), Reason: l.d.Reason(cause)}
	l.record(result.NewInterval(result.ProbeDBLoad, start, start), &gap)
	s.conn.Close()
	c, retries, err := dbconn.Reopen(ctx, l.d, dbconn.Options{Timeout: l.cfg.Timeout, Prepared: true},
		500*time.Millisecond, 10*time.Second, over)
	s.conn, gap.Retries = c, retries
	if err != nil {
		gap.Reason = l.d.Reason(err)
	}
	e := result.Seconds(l.p.since())
	gap.End = &e
	l.mu.Lock()
	l.gaps = append(l.gaps, gap)
	l.mu.Unlock()
	if c == nil {
		if ctx.Err() != nil || over() {
			return nil
		}
		return fmt.Errorf("db load: %s lost its connection and could not reconnect: %s", of, gap.Reason)
	}
	l.record(result.NewInterval(result.ProbeDBLoad, e.D(), e.D()), &gap)
	return nil
}

// record emits a gap record.
func (l *load) record(iv result.Interval, gap *result.Gap) {
	g := *gap
	iv.Load = &result.LoadInterval{Gap: &g}
	l.mu.Lock()
	l.emit(iv)
	l.mu.Unlock()
}

// committed counts one commit of s.
func (l *load) committed(s *session, lat time.Duration, payload int64) {
	l.mu.Lock()
	s.lat.Record(lat)
	l.cur.Record(lat)
	s.commits++
	s.rows += l.rows
	s.payload += payload
	l.ivRows += l.rows
	l.mu.Unlock()
}

// position reads the server's log position, or, where it does not tell
// it, counts the payload narrows has sent (sessions together).
func (l *load) position(ctx context.Context, s *session) (int64, error) {
	if s.eng.measure() == "payload" {
		return -1, nil
	}
	qctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	return s.eng.logBytes(qctx, s.conn)
}

// summary fills in the run's figures.
func (l *load) summary(res *result.DBLoad, ss []*session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Merge(l.cur)
	l.cur.Reset()
	active, logged := l.p.active(), l.p.log()
	res.LogBytes, res.Duration, res.Gaps = logged, result.Seconds(active), append(res.Gaps, l.gaps...)
	if active > 0 {
		res.Rate = float64(logged) / active.Seconds()
	}
	for _, s := range ss {
		ls := result.LoadSession{Session: s.id, Rows: s.rows, PayloadBytes: s.payload, Commits: s.commits}
		if active > 0 {
			ls.PayloadRate = float64(s.payload) / active.Seconds()
		}
		if s.lat != nil && s.lat.Count() > 0 {
			lat := result.LatenciesOf(s.lat)
			ls.CommitLatency = &lat
		}
		res.Rows, res.PayloadBytes, res.Commits = res.Rows+s.rows, res.PayloadBytes+s.payload, res.Commits+s.commits
		res.Sessions = append(res.Sessions, ls)
	}
	if l.all.Count() > 0 {
		lat := result.LatenciesOf(l.all)
		res.CommitLatency = &lat
	}
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
