package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/prom"
	"github.com/narrows/narrows/internal/probe/dbload"
	"github.com/narrows/narrows/internal/probe/dbping"
	"github.com/narrows/narrows/internal/probe/replication"
	"github.com/narrows/narrows/internal/untrusted"
)

// dbCommon are the flags every db command shares.
type dbCommon struct {
	dsn, interval, timeout string
	json                   bool
	html                   string
}

// register registers them, --interval and --timeout defaulting to the
// core's interval and timeout.
func (c *dbCommon) register(fs *flag.FlagSet, interval, timeout time.Duration) {
	fs.StringVar(&c.dsn, "dsn", "", "the database: postgres://USER:PASSWORD@HOST:5432/DB, mysql://USER:PASSWORD@HOST:3306/DB (MySQL, MariaDB) or sqlserver://USER:PASSWORD@HOST:1433?database=DB; SQL Server also Server=HOST\\INSTANCE;Database=DB;Integrated Security=SSPI (ADO, odbc:...) (or set NARROWS_DSN)")
	fs.StringVar(&c.interval, "interval", metric.FlagDuration(interval), "how often to report")
	fs.StringVar(&c.timeout, "timeout", metric.FlagDuration(timeout), "how long to wait for the server to connect or answer")
	fs.BoolVar(&c.json, "json", false, "write JSON lines (intervals as they happen, then the summary) instead of a table")
	htmlFlag(fs, &c.html)
}

type dbSetup struct {
	dsn      *dbconn.DSN
	interval time.Duration
	timeout  time.Duration
	out      sink
}

func (c *dbCommon) setup(env Env, cmd string) (*dbSetup, error) {
	raw := c.dsn
	if raw == "" {
		raw = env.Getenv("NARROWS_DSN")
	}
	if raw == "" {
		return nil, usagef("%s: --dsn is required, e.g. --dsn postgres://narrows@db1:5432/postgres (the password can come from NARROWS_DSN or PGPASSWORD instead of the command line)", cmd)
	}
	d, err := dsnOf(cmd, "--dsn", raw)
	if err != nil {
		return nil, err
	}
	s := &dbSetup{dsn: d}
	if s.interval, err = intervalFlag(c.interval); err != nil {
		return nil, err
	}
	if s.timeout, err = positiveDuration("--timeout", c.timeout); err != nil {
		return nil, err
	}
	s.out = withHTML(output(env, c.json), c.html)
	return s, nil
}

func dbPing(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "db ping")
	cfg := command.DefaultDBPing(nil)
	var c dbCommon
	c.register(fs, cfg.Ping.Interval, cfg.Ping.Timeout)
	duration := fs.String("duration", metric.FlagDuration(cfg.Ping.Duration), "how long to measure, e.g. 10s, 1m")
	count := fs.Int64("count", cfg.Ping.Count, "stop after this many queries instead of after --duration")
	query := fs.String("query", "", "the query to send (default SELECT 1)")
	var request string
	stringFlag(fs, &request, "request", "", "send SELECT '<N characters>' instead, e.g. 500 (the classic one-session test)", "payload")
	queries := fs.Int64("queries", cfg.Ping.Queries, "for the arithmetic: how many queries a report issues")
	probes := fs.Int("tcp-probes", cfg.Ping.TCPProbes, "TCP handshakes to the server's port, each after an unmeasured one, for the least the network takes (0 to 40; 0: none)")
	var agent string
	stringFlag(fs, &agent, "to", "", "an agent (narrows serve) beside the database, HOST or HOST:PORT: its net rr round trip is the network's share", "agent")
	secretFile := fs.String("secret-file", "", "the agent's shared secret (or set NARROWS_SECRET)")
	insecure := fs.Bool("insecure", false, insecureUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := c.setup(env, "db ping")
	if err != nil {
		return err
	}
	cfg.DSN = s.dsn
	cfg.Ping.Count, cfg.Ping.Interval, cfg.Ping.Queries, cfg.Ping.Timeout, cfg.Ping.TCPProbes = *count, s.interval, *queries, s.timeout, *probes
	if cfg.Ping.Duration, err = positiveDuration("--duration", *duration); err != nil {
		return err
	}
	switch {
	case *query != "" && request != "":
		return usagef("--query and --request: choose one")
	case *query != "":
		cfg.Ping.Query, cfg.Ping.Display = *query, untrusted.OneLine(*query)
	case request != "":
		n, err := metric.ParseSize(request)
		if err != nil {
			return usagef("--request: %v", err)
		}
		if n < 1 || n > 1<<20 {
			return usagef("--request %s: use 1 byte to 1M", request)
		}
		cfg.Ping.PayloadBytes = n
		cfg.Ping.Query, cfg.Ping.Display = dbping.PayloadQuery(n), fmt.Sprintf("SELECT '<%d characters>'", n)
	}
	switch {
	case *count < 0:
		return usagef("--count %d: must not be negative (0: stop after --duration)", *count)
	case *queries < 1:
		return usagef("--queries %d: must be at least 1", *queries)
	case *probes < 0 || *probes > 40:
		// Each probe is two connections closed before the login, which
		// MySQL counts toward max_connect_errors (100 by default) until
		// the login that follows resets the count.
		return usagef("--tcp-probes %d: use 0 to 40", *probes)
	}
	if agent != "" {
		addr, err := agentAddr("--to", agent)
		if err != nil {
			return err
		}
		sec, err := clientSecret(env, *secretFile, *insecure)
		if err != nil {
			return err
		}
		cfg.Agent = &client.Options{Addr: addr, Software: Version, Timeout: s.timeout, Secret: sec, Insecure: *insecure}
	}
	rep, err := cfg.Run(ctx, coreEnv(env, s.out, c.json))
	return written(ctx, s.out, rep, err)
}

// untilFlag reads a --duration where 0 means until Ctrl-C, and says how
// long the run lasts (command.Until).
func untilFlag(v string) (d time.Duration, until string, err error) {
	if v == "0" {
		return 0, command.Until(0), nil
	}
	if d, err = positiveDuration("--duration", v); err != nil {
		return 0, "", err
	}
	return d, command.Until(d), nil
}

// replicaFlags collects --replica-dsn, repeatable.
type replicaFlags []string

func (r *replicaFlags) String() string     { return strings.Join(*r, ",") }
func (r *replicaFlags) Set(v string) error { *r = append(*r, v); return nil }

// splitName reads NAME=DSN: a name is given when the text before the first
// '=' holds no ':' or '/' (a DSN's own '=' comes after its "://").
func splitName(v string) (name, dsn string) {
	if i := strings.IndexByte(v, '='); i > 0 && !strings.ContainsAny(v[:i], ":/") {
		return v[:i], v[i+1:]
	}
	return "", v
}

func dbRepl(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "db repl")
	cfg := command.DefaultDBRepl(nil)
	var c dbCommon
	c.register(fs, cfg.Repl.Interval, cfg.Repl.Timeout)
	var reps replicaFlags
	fs.Var(&reps, "replica-dsn", "a replica to read too, [NAME=]DSN; repeat for each (required for MySQL/MariaDB; PostgreSQL: adds the standby's own view)")
	// "0", not the core's 0 as FlagDuration writes it ("0s"): the usage
	// says --duration 0 as a person types it.
	duration := fs.String("duration", "0", "stop after this long (default: until Ctrl-C)")
	silentAfter := fs.String("silent-after", metric.FlagDuration(cfg.Repl.SilentAfter), "a replica not heard from for this long is silent (PostgreSQL standbys report every wal_receiver_status_interval, 10s by default)")
	promListen := fs.String("prometheus-listen", "", "also serve the figures at http://ADDR/metrics for Prometheus, e.g. 127.0.0.1:9187")
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := c.setup(env, "db repl")
	if err != nil {
		return err
	}
	cfg.DSN = s.dsn
	cfg.Repl.Interval, cfg.Repl.Timeout = s.interval, s.timeout
	if cfg.Repl.Duration, _, err = untilFlag(*duration); err != nil {
		return err
	}
	if cfg.Repl.SilentAfter, err = positiveDuration("--silent-after", *silentAfter); err != nil {
		return err
	}
	if cfg.Repl.Replicas, err = replicasOf("db repl", reps, s.dsn); err != nil {
		return err
	}
	exp := prom.New(s.dsn.Engine == dbconn.SQLServer)
	if *promListen != "" {
		at, stop, err := serveMetrics(*promListen, exp.Registry())
		if err != nil {
			return usagef("--prometheus-listen %s: %v", *promListen, err)
		}
		defer stop()
		if !c.json {
			fmt.Fprintf(env.Stdout, "serving Prometheus metrics at http://%s/metrics\n", at)
		}
	}
	cfg.Prometheus, cfg.Polled, cfg.Ended = *promListen != "", exp.Update, ctrlC
	rep, err := cfg.Run(ctx, coreEnv(env, s.out, c.json))
	if err == nil && ctrlC(ctx) {
		// Ctrl-C ended the watch as it should (the core's Ended): its
		// summary is written as a whole run's, a failure to write it said.
		ctx = context.WithoutCancel(ctx)
	}
	return written(ctx, s.out, rep, err)
}

func dbLoad(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "db load")
	cfg := command.DefaultDBLoad(nil, 0)
	var c dbCommon
	c.register(fs, cfg.Load.Interval, cfg.Load.Timeout)
	var logRate string
	stringFlag(fs, &logRate, "log-rate", "", "the log generation rate to hold, e.g. 20MB/s", "rate")
	// "60s", not the core's 60 s as FlagDuration writes it ("1m").
	duration := fs.String("duration", "60s", "how long to generate (0: until Ctrl-C)")
	tableName := fs.String("table", cfg.Load.Table, "the scratch table narrows creates, fills and drops")
	rowSize := fs.String("row-size", "1000B", "bytes of random payload per row")
	sessions := fs.Int("sessions", cfg.Load.Sessions, "sessions inserting at once, each its own connection and commits, sharing the rate (1 to 64)")
	rowsPerCommit := fs.Int64("rows-per-commit", cfg.Load.RowsPerCommit, fmt.Sprintf("rows each commit inserts, in one INSERT (default: enough for about %d commits a second per session, at most 500 rows or 4 MiB)", dbload.CommitsPerSecond))
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := c.setup(env, "db load")
	if err != nil {
		return err
	}
	if logRate == "" {
		return usagef("db load: --log-rate is required, e.g. --log-rate 20MB/s")
	}
	cfg.DSN = s.dsn
	cfg.Load.Interval, cfg.Load.Timeout, cfg.Load.Table = s.interval, s.timeout, *tableName
	if cfg.Load.Rate, err = metric.ParseRate(logRate); err != nil {
		return usagef("--log-rate: %v", err)
	}
	if cfg.Load.Duration, _, err = untilFlag(*duration); err != nil {
		return err
	}
	if !dbload.ValidTable(cfg.Load.Table) {
		return usagef("--table %q: use letters, digits and _ (at most 63), starting with a letter or _", cfg.Load.Table)
	}
	if cfg.Load.RowBytes, err = metric.ParseSize(*rowSize); err != nil {
		return usagef("--row-size: %v", err)
	}
	if cfg.Load.RowBytes < 16 || cfg.Load.RowBytes > 1<<20 {
		return usagef("--row-size %s: use 16 bytes to 1M", *rowSize)
	}
	if *sessions < 1 || *sessions > 64 {
		return usagef("--sessions %d: use 1 to 64", *sessions)
	}
	cfg.Load.Sessions, cfg.Load.RowsPerCommit = *sessions, *rowsPerCommit
	switch {
	case *rowsPerCommit < 0 || *rowsPerCommit > dbload.MaxRowsPerCommit:
		return usagef("--rows-per-commit %d: use 1 to %d (0: narrows chooses)", *rowsPerCommit, dbload.MaxRowsPerCommit)
	case *rowsPerCommit*cfg.Load.RowBytes > dbload.MaxCommitBytes:
		return usagef("--rows-per-commit %d of --row-size %s is %s a commit: keep it within %s (MySQL's default max_allowed_packet)",
			*rowsPerCommit, *rowSize, metric.FormatBytes(*rowsPerCommit*cfg.Load.RowBytes), metric.FormatBytes(dbload.MaxCommitBytes))
	}
	rep, err := cfg.Run(ctx, coreEnv(env, s.out, c.json))
	return written(ctx, s.out, rep, err)
}

// dsnOf reads the DSN cmd was given by from (--dsn, or NARROWS_DSN
// standing for it); a DSN that cannot be read is a usage error naming
// where it came from (dbconn's words say how to write it, without it).
func dsnOf(cmd, from, raw string) (*dbconn.DSN, error) {
	d, err := dbconn.Parse(raw)
	if err != nil {
		return nil, usagef("%s: %s: %v", cmd, from, err)
	}
	return d, nil
}

// replicasOf reads each --replica-dsn, [NAME=]DSN, of the primary's
// engine; a replica without a name is replicaN, N its place.
func replicasOf(cmd string, vals []string, primary *dbconn.DSN) ([]replication.Replica, error) {
	var out []replication.Replica
	for i, v := range vals {
		name, raw := splitName(v)
		d, err := dsnOf(cmd, "--replica-dsn", raw)
		if err != nil {
			return nil, err
		}
		if d.Engine != primary.Engine {
			return nil, usagef("%s: --replica-dsn %s is %s but --dsn is %s: a replica runs the primary's engine", cmd, d.Redacted, d.Engine, primary.Engine)
		}
		r := replication.Replica{Name: name, Named: name != "", DSN: d}
		if name == "" {
			r.Name = fmt.Sprintf("replica%d", i+1)
		}
		out = append(out, r)
	}
	return out, nil
}
