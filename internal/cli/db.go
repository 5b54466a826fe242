package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/prom"
	"github.com/narrows/narrows/internal/probe/dbload"
	"github.com/narrows/narrows/internal/probe/dbping"
	"github.com/narrows/narrows/internal/probe/replication"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
)

// dbCommon are the flags every db command shares.
type dbCommon struct {
	dsn, interval, timeout string
	json                   bool
	html                   string
}

func (c *dbCommon) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dsn, "dsn", "", "the database: postgres://USER:PASSWORD@HOST:5432/DB, mysql://USER:PASSWORD@HOST:3306/DB (MySQL, MariaDB) or sqlserver://USER:PASSWORD@HOST:1433?database=DB; SQL Server also Server=HOST\\INSTANCE;Database=DB;Integrated Security=SSPI (ADO, odbc:...) (or set NARROWS_DSN)")
	fs.StringVar(&c.interval, "interval", "1s", "how often to report")
	fs.StringVar(&c.timeout, "timeout", "10s", "how long to wait for the server to connect or answer")
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
	d, err := dbconn.Parse(raw)
	if err != nil {
		return nil, usagef("%s: --dsn: %v", cmd, err)
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

// dbErr turns a probe's error into what Main prints: a mistake the user
// can fix is a usage error (one line, exit 2); every message is scrubbed
// of the passwords of every DSN involved.
func dbErr(err error, dsns ...*dbconn.DSN) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, d := range dsns {
		msg = d.Scrub(msg)
	}
	if errext.IsUser(err) {
		return errext.Userf(err, "%s", msg)
	}
	if errors.Is(err, context.Canceled) {
		return errInterrupted
	}
	return errors.New(msg)
}

// dbFinish ends a db command: a run that failed before it measured
// anything (measured false) prints the error alone, without an empty
// summary; otherwise the summary goes out as finish writes it.
func dbFinish(ctx context.Context, out sink, rep *result.Report, err error, measured bool, dsns ...*dbconn.DSN) error {
	err = dbErr(err, dsns...)
	if err != nil && !measured && ctx.Err() == nil {
		return err
	}
	if errors.Is(err, errInterrupted) {
		err = nil
	}
	return finish(ctx, out, rep, err)
}

func dbPing(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "db ping")
	var c dbCommon
	c.register(fs)
	duration := fs.String("duration", "10s", "how long to measure, e.g. 10s, 1m")
	count := fs.Int64("count", 0, "stop after this many queries instead of after --duration")
	query := fs.String("query", "", "the query to send (default SELECT 1)")
	payload := fs.String("payload", "", "send SELECT '<N characters>' instead, e.g. 500 (the classic one-session test)")
	queries := fs.Int64("queries", 5000, "for the arithmetic: how many queries a report issues")
	probes := fs.Int("tcp-probes", 5, "TCP handshakes to the server's port, each after an unmeasured one, for the least the network takes (0 to 40; 0: none)")
	agent := fs.String("agent", "", "an agent (narrows serve) beside the database, HOST or HOST:PORT: its net rr round trip is the network's share")
	secretFile := fs.String("secret-file", "", "the agent's shared secret (or set NARROWS_SECRET)")
	insecure := fs.Bool("insecure", false, insecureUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := c.setup(env, "db ping")
	if err != nil {
		return err
	}
	cfg := dbping.Config{Query: "SELECT 1", Display: "SELECT 1", Count: *count, Interval: s.interval, Queries: *queries,
		Timeout: s.timeout, TCPProbes: *probes}
	if cfg.Duration, err = positiveDuration("--duration", *duration); err != nil {
		return err
	}
	switch {
	case *query != "" && *payload != "":
		return usagef("--query and --payload: choose one")
	case *query != "":
		cfg.Query, cfg.Display = *query, oneLine(*query)
	case *payload != "":
		n, err := metric.ParseSize(*payload)
		if err != nil {
			return usagef("--payload: %v", err)
		}
		if n < 1 || n > 1<<20 {
			return usagef("--payload %s: use 1 byte to 1M", *payload)
		}
		cfg.PayloadBytes = n
		cfg.Query, cfg.Display = dbping.PayloadQuery(n), fmt.Sprintf("SELECT '<%d characters>'", n)
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
	var agentUnauth bool // the agent, if asked, proved nothing (--insecure)
	if *agent != "" {
		addr, err := agentAddr("--agent", *agent)
		if err != nil {
			return err
		}
		sec, err := clientSecret(env, *secretFile, *insecure)
		if err != nil {
			return err
		}
		opts := client.Options{Addr: addr, Software: Version, Timeout: s.timeout, Secret: sec, Insecure: *insecure}
		if err := pingAgent(ctx, opts, &cfg, &agentUnauth); err != nil {
			return fmt.Errorf("db ping --agent: %w", err)
		}
	}
	rep := result.NewReport("db ping", s.dsn.Redacted, tool(), env.Now())
	rep.Facts = hostFacts(targetPeer(s.dsn.Host))
	what := cfg.Duration.String()
	if cfg.Count > 0 {
		what = metric.FormatCount(cfg.Count) + " queries"
	}
	banner(env, c.json, "narrows db ping → %s: one session, one query outstanding, %s, %s", s.dsn.Redacted, cfg.Display, what)
	res, runErr := dbping.Run(ctx, s.dsn, cfg, emitter(s.out))
	rep.DBPing = res
	rep.Unauthenticated = agentUnauth
	return dbFinish(ctx, s.out, rep, runErr, res.Queries > 0, s.dsn)
}

// pingAgent wires an agent beside the database into a db ping: its net
// rr round trip, with requests the size of the query, is the network's
// share. The agent is asked before the run, so that a wrong secret, an
// agent of another version or none at that address is one line and exit
// 2 now, not a remark after ten seconds of measuring; unauth is set when
// the agent proved nothing (--insecure).
func pingAgent(ctx context.Context, opts client.Options, cfg *dbping.Config, unauth *bool) error {
	// The query about as the wire carries it: the text plus the framing
	// (MySQL: 4-byte header and command byte; PostgreSQL: type byte,
	// 4-byte length and a NUL, one byte more).
	req := int64(len(cfg.Query)) + 5
	sess, err := connect(ctx, opts)
	if err != nil {
		return err
	}
	sess.Close()
	cfg.AgentName = opts.Addr
	queries, d := cfg.Queries, min(3*time.Second, cfg.Duration)
	if d <= 0 {
		d = 3 * time.Second // a --count run
	}
	cfg.Agent = func(ctx context.Context) (*result.RR, error) {
		sess, err := connect(ctx, opts)
		if err != nil {
			return nil, err
		}
		defer sess.Close()
		*unauth = !sess.Authenticated
		return rr.Run(ctx, sess, rr.Config{Request: req, Response: 64, Duration: d, Interval: d, Queries: queries}, func(result.Interval) {})
	}
	return nil
}

// untilFlag reads a --duration where 0 means until Ctrl-C, and says how
// long the run lasts.
func untilFlag(v string) (d time.Duration, until string, err error) {
	if v == "0" {
		return 0, "until Ctrl-C", nil
	}
	if d, err = positiveDuration("--duration", v); err != nil {
		return 0, "", err
	}
	return d, "for " + d.String(), nil
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
	var c dbCommon
	c.register(fs)
	var reps replicaFlags
	fs.Var(&reps, "replica-dsn", "a replica to read too, [NAME=]DSN; repeat for each (required for MySQL/MariaDB; PostgreSQL: adds the standby's own view)")
	duration := fs.String("duration", "0", "stop after this long (default: until Ctrl-C)")
	silentAfter := fs.String("silent-after", "15s", "a replica not heard from for this long is silent (PostgreSQL standbys report every wal_receiver_status_interval, 10s by default)")
	promListen := fs.String("prometheus-listen", "", "also serve the figures at http://ADDR/metrics for Prometheus, e.g. 127.0.0.1:9187")
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := c.setup(env, "db repl")
	if err != nil {
		return err
	}
	cfg := replication.Config{Interval: s.interval, Timeout: s.timeout}
	var until string
	if cfg.Duration, until, err = untilFlag(*duration); err != nil {
		return err
	}
	if cfg.SilentAfter, err = positiveDuration("--silent-after", *silentAfter); err != nil {
		return err
	}
	dsns := []*dbconn.DSN{s.dsn}
	for i, v := range reps {
		name, raw := splitName(v)
		d, err := dbconn.Parse(raw)
		if err != nil {
			return usagef("db repl: --replica-dsn: %v", err)
		}
		if d.Engine != s.dsn.Engine {
			return usagef("db repl: --replica-dsn %s is %s but --dsn is %s: a replica runs the primary's engine", d.Redacted, d.Engine, s.dsn.Engine)
		}
		r := replication.Replica{Name: name, Named: name != "", DSN: d}
		if name == "" {
			r.Name = fmt.Sprintf("replica%d", i+1)
		}
		cfg.Replicas = append(cfg.Replicas, r)
		dsns = append(dsns, d)
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
	rep := result.NewReport("db repl", s.dsn.Redacted, tool(), env.Now())
	rep.Facts = hostFacts(targetPeer(s.dsn.Host))
	banner(env, c.json, "narrows db repl → %s: every %s, %s", s.dsn.Redacted, s.interval, until)
	var tally advisor.ReplTally
	emit := func(iv result.Interval) {
		if iv.Repl != nil {
			advisor.ReplPoll(iv.Repl)
			tally.Add(iv)
			exp.Update(iv.Repl, tally.Run())
		}
		s.out.Interval(iv)
	}
	res, runErr := replication.Run(ctx, s.dsn, cfg, emit)
	res.Config.Prometheus = *promListen != ""
	if res.Polls > 0 {
		res.Run = tally.Run()
	}
	rep.Repl = res
	if runErr == nil && ctrlC(ctx) {
		// Ctrl-C is how a watch ends: the summary is whole, and the exit
		// code says all went well. Other signals still say what stopped it.
		res.Stopped = ""
		ctx = context.WithoutCancel(ctx)
	}
	return dbFinish(ctx, s.out, rep, runErr, res.Polls > 0, dsns...)
}

func dbLoad(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "db load")
	var c dbCommon
	c.register(fs)
	rateFlag := fs.String("rate", "", "the log generation rate to hold, e.g. 20MB/s")
	duration := fs.String("duration", "60s", "how long to generate (0: until Ctrl-C)")
	tableName := fs.String("table", dbload.DefaultTable, "the scratch table narrows creates, fills and drops")
	rowSize := fs.String("row-size", "1000B", "bytes of random payload per row")
	sessions := fs.Int("sessions", 1, "sessions inserting at once, each its own connection and commits, sharing the rate (1 to 64)")
	rowsPerCommit := fs.Int64("rows-per-commit", 0, fmt.Sprintf("rows each commit inserts, in one INSERT (default: enough for about %d commits a second per session, at most 500 rows or 4 MiB)", dbload.CommitsPerSecond))
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := c.setup(env, "db load")
	if err != nil {
		return err
	}
	if *rateFlag == "" {
		return usagef("db load: --rate is required, e.g. --rate 20MB/s")
	}
	cfg := dbload.Config{Interval: s.interval, Timeout: s.timeout, Table: *tableName}
	if cfg.Rate, err = metric.ParseRate(*rateFlag); err != nil {
		return usagef("--rate: %v", err)
	}
	var until string
	if cfg.Duration, until, err = untilFlag(*duration); err != nil {
		return err
	}
	if !dbload.ValidTable(cfg.Table) {
		return usagef("--table %q: use letters, digits and _ (at most 63), starting with a letter or _", cfg.Table)
	}
	if cfg.RowBytes, err = metric.ParseSize(*rowSize); err != nil {
		return usagef("--row-size: %v", err)
	}
	if cfg.RowBytes < 16 || cfg.RowBytes > 1<<20 {
		return usagef("--row-size %s: use 16 bytes to 1M", *rowSize)
	}
	if *sessions < 1 || *sessions > 64 {
		return usagef("--sessions %d: use 1 to 64", *sessions)
	}
	cfg.Sessions, cfg.RowsPerCommit = *sessions, *rowsPerCommit
	switch {
	case *rowsPerCommit < 0 || *rowsPerCommit > dbload.MaxRowsPerCommit:
		return usagef("--rows-per-commit %d: use 1 to %d (0: narrows chooses)", *rowsPerCommit, dbload.MaxRowsPerCommit)
	case *rowsPerCommit*cfg.RowBytes > dbload.MaxCommitBytes:
		return usagef("--rows-per-commit %d of --row-size %s is %s a commit: keep it within %s (MySQL's default max_allowed_packet)",
			*rowsPerCommit, *rowSize, metric.FormatBytes(*rowsPerCommit*cfg.RowBytes), metric.FormatBytes(dbload.MaxCommitBytes))
	}
	perCommit := cfg.RowsPerCommit
	if perCommit == 0 {
		perCommit = dbload.RowsPerCommit(cfg.Rate, cfg.Sessions, cfg.RowBytes)
	}
	rep := result.NewReport("db load", s.dsn.Redacted, tool(), env.Now())
	rep.Facts = hostFacts(targetPeer(s.dsn.Host))
	banner(env, c.json, "narrows db load → %s: %s of log into scratch table %s, %s; %s, each commit one INSERT of %s",
		s.dsn.Redacted, metric.FormatByteRate(cfg.Rate), cfg.Table, until, metric.Plural(int64(cfg.Sessions), "session"), result.CommitRows(perCommit, cfg.RowBytes))
	res, runErr := dbload.Run(ctx, s.dsn, cfg, emitter(s.out))
	rep.DBLoad = res
	return dbFinish(ctx, s.out, rep, runErr, res.Rows > 0, s.dsn)
}
