package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/dbping"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
)

// DBPing is `narrows db ping`: query round trips in one session through
// the real driver, one query outstanding, for Ping.Duration or Ping.Count
// of them, split into the network's share and the server's.
type DBPing struct {
	DSN *dbconn.DSN
	// Ping is the probe's run. Its Agent and AgentName are Run's to set
	// when Agent is given.
	Ping dbping.Config
	// Agent, when set, is `narrows serve` beside the database: its net rr
	// round trip, with requests the size of the query, is the network's
	// share. nil: the network is known from TCP handshakes alone.
	Agent *client.Options
}

// DBConnectTimeout is how long a database's connect may take by default
// (--timeout): db ping's, and doctor's host step on the database's
// queries.
const DBConnectTimeout = 10 * time.Second

// DefaultDBPing is db ping of the database at d with the flags'
// defaults: SELECT 1 back to back for 10 s, reported each second, a 10 s
// timeout, 5 TCP handshakes for the network, its arithmetic for 5,000
// queries; no agent.
func DefaultDBPing(d *dbconn.DSN) DBPing {
	return DBPing{DSN: d, Ping: dbping.Config{Query: "SELECT 1", Display: "SELECT 1", Duration: 10 * time.Second,
		Interval: time.Second, Queries: 5000, Timeout: DBConnectTimeout, TCPProbes: 5}}
}

// Run measures the round trips.
func (c DBPing) Run(ctx context.Context, env Env) (*result.Report, error) {
	cfg := c.Ping
	var agentUnauth bool // the agent, if asked, proved nothing (--insecure)
	if c.Agent != nil {
		if err := pingAgent(ctx, *c.Agent, &cfg, &agentUnauth); err != nil {
			return nil, fmt.Errorf("db ping --to: %w", err)
		}
	}
	rep := env.dbReport("db ping", c.DSN)
	what := cfg.Duration.String()
	if cfg.Count > 0 {
		what = metric.FormatCount(cfg.Count) + " queries"
	}
	env.say(fmt.Sprintf("narrows db ping → %s: one session, one query outstanding, %s, %s", c.DSN.Redacted, cfg.Display, what))
	res, runErr := dbping.Run(ctx, c.DSN, cfg, env.emit())
	rep.DBPing = res
	rep.Unauthenticated = agentUnauth
	return dbFinish(ctx, env.Tool, rep, runErr, res.Queries > 0, c.DSN)
}

// pingAgent wires an agent beside the database into a db ping: its net
// rr round trip, with requests the size of the query, is the network's
// share. The agent is asked before the run, so that a wrong secret, an
// agent of another version or none at that address is one line and exit
// 2 now, not a remark after ten seconds of measuring; unauth is set when
// the agent proved nothing (--insecure). plan chatty's --to is the same.
func pingAgent(ctx context.Context, opts client.Options, cfg *dbping.Config, unauth *bool) error {
	// The query about as the wire carries it: the text plus the framing
	// (MySQL: 4-byte header and command byte; PostgreSQL: type byte,
	// 4-byte length and a NUL, one byte more).
	req := int64(len(cfg.Query)) + 5
	sess, err := Connect(ctx, opts)
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
		sess, err := Connect(ctx, opts)
		if err != nil {
			return nil, err
		}
		defer sess.Close()
		*unauth = !sess.Authenticated
		return rr.Run(ctx, sess, rr.Config{Request: req, Response: 64, Duration: d, Interval: d, Queries: queries}, func(result.Interval) {})
	}
	return nil
}

// dbErr is a database probe's error as a person reads it: a mistake the
// person can fix stays a user error (one line, exit 2), a cancelled run
// is ErrInterrupted, and every message is scrubbed of the passwords of
// every DSN involved. Every command that reaches a database can share it.
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
		return ErrInterrupted
	}
	return errors.New(msg)
}

// dbFinish ends a db command's run: one that failed before it measured
// anything (measured false) gives the error alone and no Report, rather
// than an empty summary; otherwise the Report is finished (Finish), its
// error scrubbed of the passwords of dsns.
func dbFinish(ctx context.Context, tool result.Tool, rep *result.Report, err error, measured bool, dsns ...*dbconn.DSN) (*result.Report, error) {
	err = dbErr(err, dsns...)
	if err != nil && !measured && ctx.Err() == nil {
		return nil, err
	}
	if errors.Is(err, ErrInterrupted) {
		err = nil
	}
	return Finish(ctx, tool, rep, err)
}
