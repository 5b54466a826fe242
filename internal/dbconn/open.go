package dbconn

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/narrows/narrows/internal/netio"
)

// AppName is how narrows' sessions name themselves to the server, so a
// DBA sees them in pg_stat_activity or the process list.
const AppName = "narrows"

// Phases are the parts of opening a session.
type Phases struct {
	TCP   time.Duration // the TCP handshake (SYN to SYN-ACK, as the client sees it)
	TLS   time.Duration // the TLS negotiation, including the engine's request for it; 0 without TLS
	Login time.Duration // from the end of TLS (or TCP) to a session ready for queries
	Total time.Duration
	// TLSUsed says whether the session is encrypted.
	TLSUsed bool
}

// Options change how a session is opened.
type Options struct {
	// Timeout bounds the whole connect; 0 means 15 s.
	Timeout time.Duration
	// Blocking gives the session a socket whose calls block in the kernel
	// (Linux), for the round-trip probe: see blocking.
	Blocking bool
	// Prepared lets pgx prepare and cache statements (the extended
	// protocol); by default every query goes as one simple-protocol
	// message, as psql and pgbench -M simple send it.
	Prepared bool
}

// Conn is one session to a database server.
type Conn struct {
	DSN    *DSN
	DB     *sql.DB
	Conn   *sql.Conn
	Phases Phases

	rec *recorder
}

// recorder times one connect through the driver's hooks.
type recorder struct {
	mu                     sync.Mutex
	start, dialEnd, tlsEnd time.Time
	dialStart              time.Time
	raw                    net.Conn
	done                   bool
	blocking               bool
}

func (r *recorder) isDone() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

func (r *recorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	t0 := time.Now()
	c, err := (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	t1 := time.Now()
	if err == nil && r.blocking && !r.isDone() {
		if c, err = netio.Blocking(c); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Drivers also dial for cancel requests later: only the session's own
	// connection counts, and a fallback attempt replaces an earlier one.
	if err == nil && !r.done {
		r.dialStart, r.dialEnd, r.raw, r.tlsEnd = t0, t1, c, time.Time{}
	}
	return c, err
}

func (r *recorder) tlsDone() {
	r.mu.Lock()
	if !r.done {
		r.tlsEnd = time.Now()
	}
	r.mu.Unlock()
}

// wrapTLS chains a VerifyConnection that records when the handshake ended.
func (r *recorder) wrapTLS(c *tls.Config) *tls.Config {
	if c == nil {
		return nil
	}
	c = c.Clone()
	prev := c.VerifyConnection
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		r.tlsDone()
		if prev != nil {
			return prev(cs)
		}
		return nil
	}
	return c
}

func (r *recorder) phases(end time.Time) Phases {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	p := Phases{TCP: r.dialEnd.Sub(r.dialStart), Total: end.Sub(r.start)}
	loginFrom := r.dialEnd
	if !r.tlsEnd.IsZero() {
		p.TLSUsed = true
		p.TLS = r.tlsEnd.Sub(r.dialEnd)
		loginFrom = r.tlsEnd
	}
	p.Login = end.Sub(loginFrom)
	return p
}

type discardLogger struct{}

func (discardLogger) Print(...any) {}

// connector builds the engine's driver.Connector with the timing hooks.
func connector(d *DSN, opt Options, r *recorder) (*sql.DB, error) {
	switch d.Engine {
	case Postgres:
		cfg, err := pgx.ParseConfig(d.Raw)
		if err != nil {
			return nil, badDSN(d, err)
		}
		cfg.DialFunc = r.dial
		cfg.ConnectTimeout = opt.Timeout
		cfg.AfterNetConnect = func(ctx context.Context, _ *pgconn.Config, c net.Conn) (net.Conn, error) {
			// pgx hands over a TLS connection whose handshake has not run
			// yet: run it here, so that its time is TLS, not login.
			if tc, ok := c.(*tls.Conn); ok {
				if err := tc.HandshakeContext(ctx); err != nil {
					return nil, err
				}
				r.tlsDone()
			}
			return c, nil
		}
		if _, ok := cfg.RuntimeParams["application_name"]; !ok {
			cfg.RuntimeParams["application_name"] = AppName
		}
		if !opt.Prepared {
			cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		}
		return stdlib.OpenDB(*cfg), nil
	case MySQL:
		cfg, err := mysqlConfig(d)
		if err != nil {
			return nil, err
		}
		cfg.DialFunc = r.dial
		cfg.Timeout = opt.Timeout
		cfg.TLS = r.wrapTLS(cfg.TLS)
		cfg.Logger = discardLogger{}
		if cfg.ConnectionAttributes == "" {
			cfg.ConnectionAttributes = "program_name:" + AppName
		}
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, badDSN(d, err)
		}
		return sql.OpenDB(c), nil
	case SQLServer:
		cfg, err := msdsn.Parse(d.Raw)
		if err != nil {
			return nil, badDSN(d, err)
		}
		cfg.TLSConfig = r.wrapTLS(cfg.TLSConfig)
		if cfg.AppName == "" {
			cfg.AppName = AppName
		}
		if opt.Timeout > 0 {
			cfg.DialTimeout = opt.Timeout
			cfg.ConnTimeout = opt.Timeout
		}
		c := mssql.NewConnectorConfig(cfg)
		c.Dialer = dialerFunc(r.dial)
		return sql.OpenDB(c), nil
	}
	return nil, &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: unsupported engine", d.Redacted)}
}

// badDSN is a DSN the engine's driver cannot read.
func badDSN(d *DSN, err error) error {
	return &Error{Kind: BadDSN, Msg: fmt.Sprintf("DSN %q: %s", d.Redacted, d.Reason(err))}
}

type dialerFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialerFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}

// mysqlConfig turns mysql://USER:PASSWORD@HOST:PORT/DB?PARAMS into the
// driver's own Config (its DSN form is USER:PASSWORD@tcp(HOST:PORT)/DB).
func mysqlConfig(d *DSN) (*mysql.Config, error) {
	q := d.Params
	params := make([]string, 0, len(q))
	for k, vs := range q {
		if isSecretParam(k) {
			continue
		}
		for _, v := range vs {
			params = append(params, k+"="+v)
		}
	}
	dsn := "tcp(" + d.Addr() + ")/" + d.Database
	if len(params) > 0 {
		dsn += "?" + strings.Join(params, "&")
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, badDSN(d, err)
	}
	cfg.User, cfg.Passwd = d.User, d.password
	return cfg, nil
}

// Open opens ONE session and times its phases.
func Open(ctx context.Context, d *DSN, opt Options) (*Conn, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = 15 * time.Second
	}
	r := &recorder{blocking: opt.Blocking}
	db, err := connector(d, opt, r)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	cctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	r.start = time.Now()
	conn, err := db.Conn(cctx)
	if err == nil {
		// database/sql connects lazily in some drivers: a ping makes sure
		// the login really happened before the clock stops.
		err = conn.PingContext(cctx)
	}
	end := time.Now()
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		db.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, Classify(d, "connect", err)
	}
	return &Conn{DSN: d, DB: db, Conn: conn, Phases: r.phases(end), rec: r}, nil
}

// NetConn is the session's TCP connection (beneath any TLS).
func (c *Conn) NetConn() net.Conn {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	return c.rec.raw
}

// Abort makes any read or write in progress on the session fail now: the
// way to stop a query that hangs, whatever the driver.
func (c *Conn) Abort() {
	if nc := c.NetConn(); nc != nil {
		nc.SetDeadline(time.Now())
	}
}

// Close ends the session.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.DB.Close()
	return err
}

// ServerVersion asks the server what it is.
func (c *Conn) ServerVersion(ctx context.Context) string {
	q := map[Engine]string{Postgres: "SHOW server_version", MySQL: "SELECT VERSION()", SQLServer: "SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128))"}[c.DSN.Engine]
	var v string
	if err := c.Conn.QueryRowContext(ctx, q).Scan(&v); err != nil {
		return ""
	}
	return strings.TrimSpace(v)
}
