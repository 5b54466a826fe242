// Package lograte is the log-rate probe behind `narrows plan replica
// --dsn`: once an interval for a watch it reads, with SELECT and SHOW
// only, how much log the primary has written (PostgreSQL:
// pg_current_wal_lsn(); MySQL/MariaDB: the binary logs' sizes, across
// rotation and purges; SQL Server: each database's cumulative 'Log Bytes
// Flushed/sec' counter, the same sample `db repl` reads), and gives each
// stream's mean and peak rate with every interval's rate. It never prints
// and never judges: the advisor does that.
package lograte

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/replication"
	"github.com/narrows/narrows/internal/result"
)

// Config is what to watch.
type Config struct {
	Interval time.Duration // 0: a second
	Duration time.Duration // the watch
	Timeout  time.Duration // connect and per-read limit; 0: 10 s
}

// SustainedWindow is the window of the sustained peak: the highest mean
// over this long, given when the watch holds at least two of them.
const SustainedWindow = 10 * time.Second

// Result is what a watch read.
type Result struct {
	Engine string
	// Logs are one per stream: per database for SQL Server, one for the
	// server otherwise. A SQL Server database that wrote no log during
	// the watch is left out (Notes says how many).
	Logs  []result.LogRate
	Notes []string
}

// reader is one engine's way to the log: rates since its previous read,
// per database ("" for the whole server), nil on the first.
type reader interface {
	check(ctx context.Context, c *sql.Conn) error
	read(ctx context.Context, c *sql.Conn) (map[string]*float64, error)
	what() string
	notes(ctx context.Context, c *sql.Conn) []string
}

func newReader(e dbconn.Engine) reader {
	switch e {
	case dbconn.Postgres:
		return &pgReader{}
	case dbconn.MySQL:
		return &myReader{}
	default:
		return &msReader{prev: map[string]replication.CounterSample{}}
	}
}

// series is one stream's rates.
type series struct {
	rates []float64
	spans []time.Duration
}

// Run watches the primary for cfg.Duration. It fails before the first read
// when the server cannot be used (a dbconn.Error a person can fix); a
// connection lost later ends the watch with what was read, and a note.
func Run(ctx context.Context, d *dbconn.DSN, cfg Config) (*Result, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	res := &Result{Engine: string(d.Engine), Notes: []string{}}
	conn, err := dbconn.Open(ctx, d, dbconn.Options{Timeout: cfg.Timeout})
	if err != nil {
		return res, err
	}
	defer conn.Close()
	r := newReader(d.Engine)
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	err = r.check(cctx, conn.Conn)
	if err == nil {
		_, err = r.read(cctx, conn.Conn) // the first position
	}
	cancel()
	if err != nil {
		return res, fmt.Errorf("primary %s: %w", d.Redacted, dbconn.Classify(d, "check", err))
	}
	start, last := time.Now(), time.Now()
	all := map[string]*series{}
	var order []string
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	var stopped string
	for time.Since(start) < cfg.Duration-cfg.Interval/10 {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			stopped = "interrupted"
			break
		}
		rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		rates, err := r.read(rctx, conn.Conn)
		cancel()
		now := time.Now()
		if err != nil {
			stopped = d.Brief(err)
			break
		}
		for db, v := range rates {
			if v == nil {
				continue
			}
			s := all[db]
			if s == nil {
				s = &series{}
				all[db] = s
				order = append(order, db)
			}
			s.rates, s.spans = append(s.rates, *v), append(s.spans, now.Sub(last))
		}
		last = now
	}
	watched := last.Sub(start)
	idle := 0
	slices.Sort(order)
	for _, db := range order {
		s := all[db]
		l := summarize(s, cfg.Interval)
		if d.Engine == dbconn.SQLServer && l.Bytes == 0 {
			idle++
			continue
		}
		l.Database, l.Source, l.Watch = db, "measured", result.Seconds(watched)
		l.What = fmt.Sprintf("%s, every %s for %s", r.what(), metric.FormatDuration(cfg.Interval), metric.FormatDuration(watched.Round(10*time.Millisecond)))
		res.Logs = append(res.Logs, l)
	}
	if idle > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s wrote no log during the watch and %s left out.", metric.Plural(int64(idle), "database"), map[bool]string{true: "is", false: "are"}[idle == 1]))
	}
	if stopped != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("The watch stopped after %s: %s.", metric.FormatDuration(watched.Round(10*time.Millisecond)), stopped))
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
	res.Notes = append(res.Notes, r.notes(nctx, conn.Conn)...)
	cancel()
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case len(res.Logs) == 0 && stopped != "":
		return res, fmt.Errorf("primary %s: %s", d.Redacted, stopped)
	case len(res.Logs) == 0 && d.Engine == dbconn.SQLServer:
		return res, errors.New("no database wrote log during the watch: watch longer, while the load runs, or give the rate (--log-rate)")
	case len(res.Logs) == 0:
		return res, errors.New("no log position was read: watch for longer than one interval")
	}
	return res, nil
}

// summarize is one stream's mean (over the whole watch, each interval by
// its length), its highest interval, and its highest SustainedWindow.
func summarize(s *series, interval time.Duration) result.LogRate {
	l := result.LogRate{Samples: s.rates, Interval: result.Seconds(interval)}
	var bytes, secs float64
	for i, v := range s.rates {
		bytes += v * s.spans[i].Seconds()
		secs += s.spans[i].Seconds()
		l.Peak = max(l.Peak, v)
	}
	if secs > 0 {
		l.Mean = bytes / secs
	}
	l.Bytes = int64(bytes + 0.5)
	k := int(SustainedWindow / interval)
	if k >= 2 && len(s.rates) >= 2*k {
		for i := 0; i+k <= len(s.rates); i++ {
			var b, t float64
			for j := i; j < i+k; j++ {
				b += s.rates[j] * s.spans[j].Seconds()
				t += s.spans[j].Seconds()
			}
			l.PeakSustained = max(l.PeakSustained, b/t)
		}
		l.PeakWindow = result.Seconds(SustainedWindow)
	}
	return l
}

// rateSince is (cur − prev) ÷ the time between, nil on the first read.
func rateSince(cur int64, at time.Time, prev *int64, prevAt time.Time) *float64 {
	if prev == nil || !at.After(prevAt) || cur < *prev {
		return nil
	}
	v := float64(cur-*prev) / at.Sub(prevAt).Seconds()
	return &v
}

// PostgreSQL: the WAL insert position, on a primary (any user may read it).
type pgReader struct {
	prev   *int64
	prevAt time.Time
}

func (*pgReader) what() string { return "pg_current_wal_lsn()" }

func (*pgReader) check(ctx context.Context, c *sql.Conn) error {
	var rec bool
	if err := c.QueryRowContext(ctx, `SELECT pg_is_in_recovery()`).Scan(&rec); err != nil {
		return err
	}
	if rec {
		return dbconn.NotPrimaryf("this server is a standby (pg_is_in_recovery() is true): point --dsn at the primary, whose WAL the replica would receive")
	}
	return nil
}

func (r *pgReader) read(ctx context.Context, c *sql.Conn) (map[string]*float64, error) {
	var s string
	if err := c.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&s); err != nil {
		return nil, err
	}
	at := time.Now()
	n, err := dbconn.ParseLSN(s)
	if err != nil {
		return nil, err
	}
	v := rateSince(n, at, r.prev, r.prevAt)
	r.prev, r.prevAt = &n, at
	return map[string]*float64{"": v}, nil
}

func (*pgReader) notes(context.Context, *sql.Conn) []string { return nil }

// MySQL/MariaDB: the binary logs' sizes (the active log's is its
// position). Growth is counted file by file against the previous read, so
// a rotation counts the rest of the old file and the new one, and a purge
// of old files counts nothing.
type myReader struct {
	sizes  map[string]int64
	prevAt time.Time
}

func (*myReader) what() string { return "the binary logs' sizes (SHOW BINARY LOGS)" }

func (*myReader) check(ctx context.Context, c *sql.Conn) error {
	return replication.CheckBinlog(ctx, c)
}

func (r *myReader) read(ctx context.Context, c *sql.Conn) (map[string]*float64, error) {
	rows, err := dbconn.QueryMaps(ctx, c, "SHOW BINARY LOGS")
	if err != nil {
		return nil, err
	}
	at := time.Now()
	sizes := map[string]int64{}
	for _, row := range rows {
		name, size := row["log_name"], row["file_size"]
		if name == nil || size == nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(*size), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS: file size %q: %w", *size, err)
		}
		sizes[*name] = n
	}
	if len(sizes) == 0 {
		return nil, errors.New("SHOW BINARY LOGS lists no binary log")
	}
	var v *float64
	if r.sizes != nil && at.After(r.prevAt) {
		rate := float64(binlogGrowth(r.sizes, sizes)) / at.Sub(r.prevAt).Seconds()
		v = &rate
	}
	r.sizes, r.prevAt = sizes, at
	return map[string]*float64{"": v}, nil
}

// binlogGrowth is what the binary logs grew by between two listings,
// file by file: a file new since prev counts whole, one purged since
// counts nothing.
func binlogGrowth(prev, cur map[string]int64) int64 {
	var grown int64
	for name, n := range cur {
		grown += max(n-prev[name], 0)
	}
	return grown
}

// notes: MariaDB's Annotate_rows events are in the binary log but reach
// only a replica that asks for them (docs/testbed.md).
func (*myReader) notes(ctx context.Context, c *sql.Conn) []string {
	var on string
	if err := c.QueryRowContext(ctx, `SELECT @@binlog_annotate_row_events`).Scan(&on); err != nil || (on != "1" && !strings.EqualFold(on, "ON")) {
		return nil
	}
	return []string{"binlog_annotate_row_events is ON: the rate counts the Annotate_rows events (each row change's statement text), which the source ships only to a replica with replicate_annotate_row_events and log_slave_updates on; to another, less crosses the network."}
}

// SQL Server: each database's cumulative 'Log Bytes Flushed/sec', as db
// repl samples it (VIEW SERVER STATE; 2022: VIEW SERVER PERFORMANCE STATE).
// The system databases are not in an availability group and are left out.
type msReader struct {
	prev map[string]replication.CounterSample
}

func (*msReader) what() string {
	return "'Log Bytes Flushed/sec' per database (sys.dm_os_performance_counters)"
}

func (r *msReader) check(ctx context.Context, c *sql.Conn) error {
	_, err := dbconn.QueryMaps(ctx, c, replication.MSSQLCounters)
	if dbconn.KindOf(err) == dbconn.Permission {
		return dbconn.Permissionf("the login lacks VIEW SERVER STATE (SQL Server 2022: VIEW SERVER PERFORMANCE STATE), needed for sys.dm_os_performance_counters: GRANT VIEW SERVER STATE TO [login]")
	}
	return err
}

// msSystem are the databases that never ship log to a secondary.
var msSystem = map[string]bool{"_total": true, "master": true, "model": true, "msdb": true, "tempdb": true, "mssqlsystemresource": true}

func (r *msReader) read(ctx context.Context, c *sql.Conn) (map[string]*float64, error) {
	rows, err := dbconn.QueryMaps(ctx, c, replication.MSSQLCounters)
	if err != nil {
		return nil, err
	}
	return MSSQLRates(rows, r.prev, time.Now()), nil
}

// MSSQLRates is db repl's reading of the counters (MapMSSQLCounters),
// without the system databases.
func MSSQLRates(rows []map[string]*string, prev map[string]replication.CounterSample, at time.Time) map[string]*float64 {
	out := replication.MapMSSQLCounters(rows, prev, at)
	for db := range out {
		if msSystem[strings.ToLower(db)] {
			delete(out, db)
		}
	}
	return out
}

func (*msReader) notes(context.Context, *sql.Conn) []string { return nil }
