package command

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/probe/wakeup"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// Host is `narrows host`: what each end's own machine adds to a round
// trip, by experiment on that machine, this host's first and then the
// agent's (one after the other: on one machine, two experiments at once
// would each keep the other's CPUs awake). Without an agent, this host
// only.
type Host struct {
	Agent *client.Options // nil: this host only
	// Duration is each machine's budget: its experiment ends sooner once
	// judged (at least MinHostDuration).
	Duration time.Duration
	// Queries is the report the arithmetic is for.
	Queries int64
	// TryCoalescing then measures what the agent's receive interrupt
	// coalescing adds to a round trip (net rr's --try-coalescing).
	TryCoalescing bool
	// DSN, when given, is the database whose queries this host's
	// experiment times in place of narrows' own pair (PostgreSQL, MySQL).
	DSN *dbconn.DSN
	// Timeout bounds the database's connect.
	Timeout time.Duration
	// Job, when given, is the operator's own job, which this host's
	// experiment runs whole in place of narrows' pair (with no agent and
	// no DSN).
	Job *wakeup.Job
	// OrPair: when the database's session cannot be timed so (MySQL over
	// TLS), this host's experiment runs on narrows' pair instead, and
	// says why (doctor's; narrows host --dsn leaves it unjudged).
	OrPair bool
}

// MinHostDuration is the shortest budget: the experiment's fewest pairs
// of blocks (wakeup.Config's defaults: four pairs of 8.25 s).
var MinHostDuration = wakeup.Config{}.MinDuration()

// DefaultHost is host with the flags' defaults: 40 s a machine, its
// arithmetic for 5,000 queries.
func DefaultHost(agent *client.Options) Host {
	return Host{Agent: agent, Duration: 40 * time.Second, Queries: 5000}
}

// Run runs the experiments.
func (c Host) Run(ctx context.Context, env Env) (*result.Report, error) {
	if c.Duration < MinHostDuration {
		return nil, errext.Userf(nil, "--duration %s: the experiment needs at least %s (four pairs of blocks, as is and awake): use --duration %s or more",
			metric.FlagDuration(c.Duration), metric.FlagDuration(MinHostDuration), metric.FlagDuration(MinHostDuration))
	}
	if c.Job != nil && (c.Agent != nil || c.DSN != nil || c.TryCoalescing) {
		return nil, errext.Userf(nil, "host: a job is timed on this host alone, with this host's CPUs kept awake around it: give no --to, --dsn or --try-coalescing with it, and run narrows host --to AGENT apart for the agent's host")
	}
	if c.DSN != nil {
		if err := wakeup.QueriesHere(); err != nil {
			return nil, errext.Userf(nil, "--dsn: %s", err)
		}
	}
	var rep *result.Report
	var sess *client.Session
	if c.Agent != nil {
		var err error
		if sess, err = Connect(ctx, *c.Agent); err != nil {
			return nil, err
		}
		defer sess.Close()
		if err := fitsAgent(sess, c.Agent.Addr, c.Duration); err != nil {
			return nil, err
		}
		rep = env.agentReport("host", c.Agent.Addr, sess)
	} else {
		rep = result.NewReport("host", "this host", env.Tool, env.now())
	}
	h := &result.Host{Queries: c.Queries}
	rep.Host = h
	where := "this host"
	if sess != nil {
		h.SameHost = sess.SameHost()
		if !h.SameHost {
			where = "this host, then the agent's at " + c.Agent.Addr
		}
	}
	env.say(fmt.Sprintf("narrows host: what waking idle CPUs adds to each round trip, by experiment on %s (up to %s each)", where, metric.FlagDuration(c.Duration)))
	here := &result.HostSide{Power: sysinfo.ReadPower()}
	h.Here = here
	var w *result.Wakeup
	var err error
	switch {
	case c.Job != nil:
		h.Job = &result.HostJob{Program: c.Job.Name}
		env.note(fmt.Sprintf("this host's experiment on the job (%s), run whole again and again, in place of narrows' pair", c.Job.Name))
		w, err = wakeup.RunJob(ctx, wakeup.Config{Duration: c.Duration}, *c.Job)
	case c.DSN != nil:
		w, h.Database, err = c.database(ctx, env)
	}
	if w == nil && err == nil {
		w, err = wakeup.Run(ctx, wakeup.Config{Duration: c.Duration})
	}
	here.Wakeup = w
	if err != nil || ctx.Err() != nil {
		return Finish(ctx, env.Tool, rep, err)
	}
	if sess != nil && !h.SameHost {
		if !sess.Runs(wire.KindHost) {
			h.AgentMissing = fmt.Sprintf("the agent (narrows %s) does not run host experiments: upgrade it", cmp.Or(sess.Software, "of an older release"))
		} else {
			env.note("the same experiment on the agent's host")
			spec := wire.TestSpec{Kind: wire.KindHost, Duration: c.Duration, Interval: time.Second}
			done, ferr := sess.RunFar(ctx, spec, func(*wire.Accepted) error { return nil }, func(result.Interval) {})
			if done != nil && done.Host != nil {
				if err := agentSide(done.Host); err != nil {
					h.AgentMissing = "the agent's answer is left out (no machine gives such figures: check that narrows serve answers at its address): " + err.Error()
				} else {
					h.Agent = done.Host
				}
			}
			if ferr != nil {
				h.AgentMissing = ferr.Error()
				if ctx.Err() != nil {
					return Finish(ctx, env.Tool, rep, nil)
				}
			}
		}
	}
	if c.TryCoalescing && ctx.Err() == nil {
		if sess == nil || h.SameHost {
			h.Coalescing = &result.CoalescingTry{End: result.EndAgent, Verdict: result.CoalescingNotTried, Restored: true,
				Why: "no agent on another host: --try-coalescing changes the NIC of the agent's host (--to)"}
			return Finish(ctx, env.Tool, rep, nil)
		}
		env.note("then --try-coalescing: the agent's receive interrupt coalescing as it is and at its least")
		try, err := rr.TryCoalescing(ctx, sess, rr.Config{Request: 64, Response: 64, Queries: c.Queries})
		h.Coalescing = try
		return Finish(ctx, env.Tool, rep, err)
	}
	return Finish(ctx, env.Tool, rep, nil)
}

// hostQuery is the query the database experiment sends: the least a
// server does, so what waking adds is most of what changes.
const hostQuery = "SELECT 1"

// database runs this host's experiment on the database's own queries: a
// session opened as db ping's is (its socket blocking in the kernel),
// then taken over for one query after another in the engine's protocol.
// A database that cannot be reached is the run's error; one whose session
// cannot be taken over (TLS for MySQL) leaves the experiment unjudged,
// with why; OrPair, either leaves it to narrows' pair (no wake-up, no
// database).
func (c Host) database(ctx context.Context, env Env) (*result.Wakeup, *result.HostDatabase, error) {
	d := c.DSN
	env.note(fmt.Sprintf("this host's experiment on %s's own queries (%s to %s) in place of narrows' pair", d.Engine.Name(), hostQuery, d.Where()))
	conn, err := dbconn.Open(ctx, d, dbconn.Options{Timeout: c.Timeout, Blocking: true})
	if err != nil && c.OrPair && ctx.Err() == nil {
		env.note(fmt.Sprintf("%s could not be reached (%s): narrows' pair in its place", d.Engine.Name(), d.Reason(err)))
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	db := &result.HostDatabase{Engine: d.Engine.Name(), Server: d.Where(), Query: hostQuery}
	if nc := conn.NetConn(); nc != nil {
		db.Local = sysinfo.SameHost(nc.LocalAddr(), nc.RemoteAddr())
	}
	q, err := conn.Raw(hostQuery)
	if err != nil && c.OrPair {
		env.note(fmt.Sprintf("%s's session cannot be timed so (%s): narrows' pair in its place", d.Engine.Name(), d.Reason(err)))
		return nil, nil, nil
	}
	if err != nil {
		return &result.Wakeup{Verdict: result.WakeupUnjudged, Cannot: "the database's session cannot be timed so: " + err.Error()}, db, nil
	}
	w, err := wakeup.RunQueries(ctx, wakeup.Config{Duration: c.Duration}, q)
	if err != nil && ctx.Err() == nil {
		// The server's answers could not be read, or one took over 2 s.
		err = fmt.Errorf("timing %s's queries at %s: %w: check that --dsn names the database's own port (not a proxy or a pooler), and run it again when the server answers SELECT 1 at once",
			d.Engine.Name(), d.Where(), err)
	}
	return w, db, err
}

// agentSide refuses an agent's side whose figures do not hold together
// (an agent is believed only as far as what it sends can be true): a
// verdict of its own words, a wake-up or a round trip under zero or over
// a second, more blocks than its budget could run.
func agentSide(s *result.HostSide) error {
	w := s.Wakeup
	if w == nil {
		return errors.New("no experiment in it")
	}
	switch w.Verdict {
	case result.WakeupCosts, result.WakeupFree, result.WakeupUnjudged:
	default:
		return fmt.Errorf("a verdict narrows does not give (%q)", w.Verdict)
	}
	for _, d := range []result.Seconds{w.PerWake, w.AsIs, w.Awake} {
		if d.D() < -time.Second || d.D() > time.Second {
			return fmt.Errorf("a figure of %s a round trip", metric.FormatDuration(d.D()))
		}
	}
	if w.PerWakeMargin < 0 || w.PerWakeMargin.D() > time.Second || w.AsIs < 0 || w.Awake < 0 {
		return errors.New("a figure below zero or over a second")
	}
	if len(w.Blocks) > maxAgentBlocks {
		return fmt.Errorf("%d blocks, more than any budget runs", len(w.Blocks))
	}
	return nil
}

// maxAgentBlocks is more blocks than the longest test an agent allows
// (24 h) could run at three a second.
const maxAgentBlocks = 3 * 24 * 3600
