package dbconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/narrows/narrows/internal/netio"
)

// AppName is how narrows' sessions name themselves to the server, so a
// DBA sees them in pg_stat_activity or the process list.
const AppName = "narrows"

// Phases are the parts of opening a session. They follow one another
// without a gap: Setup, each failed attempt's Took, TCP, TLS and Login add
// up to Total, so no part of the connect goes unaccounted.
type Phases struct {
	// Setup is the time before the first dial: the driver's own work and,
	// for PostgreSQL, its name lookup (the other drivers look the name up
	// inside the dial, so it is in TCP).
	Setup time.Duration
	// Failed are the connection attempts, in order, that did not become
	// the session: with sslmode=prefer pgx asks for TLS, and when the
	// server refuses it closes that connection and opens a new one.
	Failed []Attempt
	TCP    time.Duration // the session's TCP handshake (SYN to SYN-ACK, as the client sees it)
	TLS    time.Duration // the TLS negotiation, including the engine's request for it; 0 without TLS
	Login  time.Duration // from the end of TLS (or TCP) to a session ready for queries
	Total  time.Duration
	// TLSUsed says whether the session is encrypted.
	TLSUsed bool
}

// Outcomes of a failed connection attempt (a fixed set, also in JSON).
const (
	AttemptTLSRefused  = "tls_refused" // the server answered no to the request for TLS
	AttemptTLSFailed   = "tls_failed"  // the TLS handshake failed
	AttemptNoTCP       = "no_tcp"      // the TCP connection was not made
	AttemptAbandoned   = "abandoned"   // the driver gave it up after TLS (a login over TLS that the server refused)
	AttemptUnexplained = "unexplained" // the driver gave it up, narrows does not know why
)

// Attempt is a connection attempt that did not become the session.
type Attempt struct {
	TCP     time.Duration // its TCP handshake; 0 when there was none
	Took    time.Duration // from its dial to the next attempt's
	Outcome string        // one of the Attempt* outcomes
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

// recorder times one connect through the driver's hooks: every dial is
// an attempt, and the last one that connected is the session's.
type recorder struct {
	mu       sync.Mutex
	start    time.Time
	attempts []*attempt
	done     bool
	blocking bool
	watchPG  bool // watch PostgreSQL's request for TLS on each connection
}

// attempt is one dial and what became of it.
type attempt struct {
	start, dialEnd, tlsEnd time.Time // dialEnd zero: the dial failed
	raw                    net.Conn
	tlsAsked, tlsRefused   bool
	tlsFailed              bool
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
	// Drivers also dial for cancel requests later: only the connect's own
	// dials count.
	if r.done {
		return c, err
	}
	a := &attempt{start: t0}
	r.attempts = append(r.attempts, a)
	if err != nil {
		return c, err
	}
	a.dialEnd, a.raw = t1, c
	if r.watchPG {
		return &pgWatch{Conn: c, r: r, a: a}, nil
	}
	return c, nil
}

// current is the attempt under way (nil before the first dial).
func (r *recorder) current() *attempt {
	if len(r.attempts) == 0 {
		return nil
	}
	return r.attempts[len(r.attempts)-1]
}

func (r *recorder) tlsDone() {
	r.mu.Lock()
	if a := r.current(); !r.done && a != nil {
		a.tlsEnd = time.Now()
	}
	r.mu.Unlock()
}

func (r *recorder) tlsFailed() {
	r.mu.Lock()
	if a := r.current(); !r.done && a != nil {
		a.tlsFailed = true
	}
	r.mu.Unlock()
}

// connected says whether any attempt made a TCP connection.
func (r *recorder) connected() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.attempts {
		if !a.dialEnd.IsZero() {
			return true
		}
	}
	return false
}

// sslRequest is PostgreSQL's request for TLS: length 8, code 80877103.
var sslRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}

// pgWatch sees, while the session is being opened, whether pgx asked the
// server for TLS and what the server answered ('S' or 'N'): the one
// thing that tells a refused TLS attempt from any other. Once the
// session is open it only passes calls through.
type pgWatch struct {
	net.Conn
	r        *recorder
	a        *attempt
	answered atomic.Bool
}

func (w *pgWatch) Write(p []byte) (int, error) {
	if !w.answered.Load() && bytes.Equal(p, sslRequest) {
		w.r.mu.Lock()
		w.a.tlsAsked = true
		w.r.mu.Unlock()
	}
	return w.Conn.Write(p)
}

func (w *pgWatch) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	if n > 0 && !w.answered.Swap(true) {
		w.r.mu.Lock()
		if w.a.tlsAsked && p[0] == 'N' {
			w.a.tlsRefused = true
		}
		w.r.mu.Unlock()
	}
	return n, err
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

// phases ends the recording: the last attempt that connected is the
// session's, every one before it failed.
func (r *recorder) phases(end time.Time) Phases {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	p := Phases{Total: end.Sub(r.start)}
	if len(r.attempts) == 0 {
		p.Login = p.Total
		return p
	}
	p.Setup = r.attempts[0].start.Sub(r.start)
	last := r.attempts[len(r.attempts)-1]
	for i, a := range r.attempts[:len(r.attempts)-1] {
		f := Attempt{Took: r.attempts[i+1].start.Sub(a.start), Outcome: AttemptUnexplained}
		switch {
		case a.dialEnd.IsZero():
			f.Outcome = AttemptNoTCP
		case a.tlsRefused:
			f.Outcome = AttemptTLSRefused
		case a.tlsFailed || a.tlsAsked && a.tlsEnd.IsZero():
			f.Outcome = AttemptTLSFailed
		case !a.tlsEnd.IsZero():
			f.Outcome = AttemptAbandoned
		}
		if !a.dialEnd.IsZero() {
			f.TCP = a.dialEnd.Sub(a.start)
		}
		p.Failed = append(p.Failed, f)
	}
	loginFrom := last.start
	if !last.dialEnd.IsZero() {
		p.TCP, loginFrom = last.dialEnd.Sub(last.start), last.dialEnd
	}
	if !last.tlsEnd.IsZero() {
		p.TLSUsed = true
		p.TLS = last.tlsEnd.Sub(last.dialEnd)
		loginFrom = last.tlsEnd
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
					r.tlsFailed()
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
		cfg, err := parseMSSQL(d.Raw)
		if err != nil {
			return nil, badDSN(d, err)
		}
		if cfg.Instance != "" && cfg.Port == 0 {
			cfg.Port = uint64(d.Port) // from the SQL Browser (Resolve): the driver asks it no more
		}
		if err := setLogin(d, &cfg); err != nil {
			return nil, err
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
	if err := d.Resolve(ctx, opt.Timeout); err != nil {
		return nil, err
	}
	r := &recorder{blocking: opt.Blocking, watchPG: d.Engine == Postgres}
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
	// pgx, go-sql-driver/mysql and go-mssqldb finish the login inside
	// Conn: the clock stops there. The ping after it is a round trip of
	// its own (pgx sends an empty query), not part of the login; it only
	// makes sure the session answers.
	end := time.Now()
	if err == nil {
		err = conn.PingContext(cctx)
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		db.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if cctx.Err() == context.DeadlineExceeded {
			return nil, timedOut(d, opt.Timeout, r.connected(), err)
		}
		if KindOf(err) == Other && r.connected() && closedEarly(err) {
			return nil, &Error{Kind: Unreachable, Err: err, Msg: fmt.Sprintf("connect: %s: %s accepted the TCP connection, then closed it before the %s login finished (%s): is it the database's port, and does the server take this client (its TLS settings, its connection limits)?",
				d.Redacted, d.Where(), d.Engine.Name(), d.Brief(err))}
		}
		return nil, Classify(d, "connect", err)
	}
	return &Conn{DSN: d, DB: db, Conn: conn, Phases: r.phases(end), rec: r}, nil
}

// timedOut is a connect that did not finish within the timeout: whether
// a TCP connection was made says where it stalled.
func timedOut(d *DSN, timeout time.Duration, connected bool, err error) error {
	if !connected {
		return &Error{Kind: Unreachable, Err: err, Msg: fmt.Sprintf("connect: %s: no TCP connection to %s within %s: a wrong host or port, or a firewall that drops the packets (--timeout sets the wait)",
			d.Redacted, d.Where(), timeout)}
	}
	return &Error{Kind: Unreachable, Err: err, Msg: fmt.Sprintf("connect: %s: %s accepted the TCP connection but the %s login did not finish within %s: is it the database's port, and is the server overloaded or stuck? (--timeout sets the wait)",
		d.Redacted, d.Where(), d.Engine.Name(), timeout)}
}

// closedEarly says whether err is the server closing the connection.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// NetConn is the session's TCP connection (beneath any TLS).
func (c *Conn) NetConn() net.Conn {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	if a := c.rec.current(); a != nil {
		return a.raw
	}
	return nil
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
