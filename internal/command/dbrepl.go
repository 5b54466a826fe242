package command

import (
	"context"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/probe/replication"
	"github.com/narrows/narrows/internal/result"
)

// DBRepl is `narrows db repl`: replication read on the primary (and on
// each of Repl.Replicas) every Repl.Interval, stage by stage, each poll
// judged as it comes, for Repl.Duration or until the run is stopped.
type DBRepl struct {
	DSN *dbconn.DSN // the primary
	// Repl is the probe's run; its Replicas' DSNs are scrubbed from
	// every error as the primary's is.
	Repl replication.Config
	// Prometheus records that the figures are served to Prometheus too
	// (by whoever set Polled): the summary says so.
	Prometheus bool
	// Polled, when set, is given each poll once the advisor has judged it,
	// with the run so far, before the poll's interval goes to Env.Emit
	// (the command line's Prometheus exporter).
	Polled func(*result.ReplPoll, *result.ReplRun)
	// Ended, when set, says whether the end of ctx is how this watch
	// ends (on the command line: Ctrl-C alone): the summary is then whole
	// and the run went well. nil: every end of ctx is an interruption.
	Ended func(ctx context.Context) bool
}

// DefaultDBRepl is db repl of the primary at d with the flags' defaults:
// every second until stopped, a replica silent after 15 s, a 10 s
// timeout; no replica of its own.
func DefaultDBRepl(d *dbconn.DSN) DBRepl {
	return DBRepl{DSN: d, Repl: replication.Config{Interval: time.Second, SilentAfter: 15 * time.Second, Timeout: 10 * time.Second}}
}

// Until says how long a run of d lasts, where 0 means until it is
// stopped: "until Ctrl-C", or "for 1m0s".
func Until(d time.Duration) string {
	if d == 0 {
		return "until Ctrl-C"
	}
	return "for " + d.String()
}

// Run watches the replication.
func (c DBRepl) Run(ctx context.Context, env Env) (*result.Report, error) {
	dsns := []*dbconn.DSN{c.DSN}
	for _, r := range c.Repl.Replicas {
		dsns = append(dsns, r.DSN)
	}
	rep := env.dbReport("db repl", c.DSN)
	env.say(fmt.Sprintf("narrows db repl → %s: every %s, %s", c.DSN.Redacted, c.Repl.Interval, Until(c.Repl.Duration)))
	var tally advisor.ReplTally
	out := env.emit()
	emit := func(iv result.Interval) {
		if iv.Repl != nil {
			advisor.ReplPoll(iv.Repl)
			tally.Add(iv)
			if c.Polled != nil {
				c.Polled(iv.Repl, tally.Run())
			}
		}
		out(iv)
	}
	res, runErr := replication.Run(ctx, c.DSN, c.Repl, emit)
	res.Config.Prometheus = c.Prometheus
	if res.Polls > 0 {
		res.Run = tally.Run()
	}
	rep.Repl = res
	if runErr == nil && c.Ended != nil && c.Ended(ctx) {
		// The watch's own end: the summary is whole, and the run went
		// well. Other stops still say what stopped it.
		res.Stopped = ""
		ctx = context.WithoutCancel(ctx)
	}
	return dbFinish(ctx, env.Tool, rep, runErr, res.Polls > 0, dsns...)
}
