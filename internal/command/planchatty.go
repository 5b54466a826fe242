package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/dbping"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
)

// DefaultWhatIf is plan chatty's what-if when no other round trip is
// asked: the application server in the database's rack.
const DefaultWhatIf = 200 * time.Microsecond

// PlanChatty is `narrows plan chatty`: how long a chatty report's queries
// wait on the wire, and what another network or fewer round trips would
// make of it. Its figures are measured (DSN, Agent), read from a saved
// run (From) or, with neither, the defaults; then Assume sets figures by
// hand over them. Measuring, From is not read.
type PlanChatty struct {
	Queries            int64           // the queries the report sends one after another in one session
	RoundTripsPerQuery int             // 1 to advisor.MaxRoundTripsPerQuery
	RTTs               []time.Duration // the what-ifs: another network's round trip
	// QueriesAsked, RoundTripsAsked and RTTsAsked say these were asked
	// for: from a saved plan chatty, its own stand for the others.
	QueriesAsked, RoundTripsAsked, RTTsAsked bool

	From   plan.Saved        // a saved run: its last net rr, db ping or plan chatty
	Assume []plan.Assumption // figures given by hand (plan.ChattyAssumeNames)
	// DSN is the database whose query round trips are measured through
	// the driver (db ping, with its network/server split); nil: none.
	DSN *dbconn.DSN
	// Agent is the agent that measures the network's round trip: with
	// DSN, one beside the database; alone, net rr (the network only).
	Agent    *client.Options
	Duration time.Duration // how long to measure
	Timeout  time.Duration // how long db ping waits for the database
	// Payload is, with DSN, the query SELECT '<Payload characters>'
	// instead of SELECT 1; with Agent alone, requests of Payload bytes
	// instead of 64. 0: neither.
	Payload int64
}

// DefaultPlanChatty is plan chatty with its flags' defaults: 5,000
// queries of one round trip each, what if the network were 200 µs, 5 s
// of measuring. It has no figures: give DSN, Agent, From or Assume.
func DefaultPlanChatty() PlanChatty {
	return PlanChatty{Queries: 5000, RoundTripsPerQuery: 1, RTTs: []time.Duration{DefaultWhatIf}, Duration: 5 * time.Second, Timeout: 10 * time.Second}
}

// chattyRun is what the report says of the measurement.
type chattyRun struct {
	note                  func(string) // Env.note
	target, software      string
	unauth                bool
	agentFacts, hostFacts *result.Facts // the agent's host, and this host's routed to it
}

// Run measures or reads the figures and plans.
func (c PlanChatty) Run(ctx context.Context, env Env) (*result.Report, error) {
	started := env.now() // the run starts here, before anything is measured
	r := chattyRun{note: env.note}
	f, saved, runErr, err := c.figures(ctx, env.Tool, &r)
	if err != nil {
		return nil, err
	}
	in := advisor.ChattyInput{Figures: f, Queries: c.Queries, RoundTripsPerQuery: c.RoundTripsPerQuery, RTTs: c.RTTs}
	if saved != nil {
		if !c.QueriesAsked && saved.Queries > 0 {
			in.Queries = saved.Queries
		}
		if !c.RoundTripsAsked && saved.RoundTripsPerQuery > 0 {
			in.RoundTripsPerQuery = saved.RoundTripsPerQuery
		}
		var rtts []time.Duration
		for _, cs := range saved.Cases {
			if cs.Case == result.ChattyRTT {
				rtts = append(rtts, cs.RTT.D())
			}
		}
		if !c.RTTsAsked && rtts != nil {
			in.RTTs = rtts
		}
	}
	p, err := advisor.PlanChatty(in)
	if err != nil {
		return nil, errext.Userf(nil, "plan chatty: %v", err)
	}
	rep := result.NewReport("plan chatty", r.target, env.Tool, started)
	rep.Agent, rep.Unauthenticated = r.software, r.unauth
	rep.Facts, rep.AgentFacts = r.hostFacts, r.agentFacts
	rep.ChattyPlan = &p
	return Finish(ctx, env.Tool, rep, runErr)
}

// figures measures, reads or takes by hand the figures to plan from, and
// the saved plan chatty they were read from (nil if none). A measurement
// that failed part way (runErr) still gives what it measured; err is a
// failure with nothing to plan from.
func (c PlanChatty) figures(ctx context.Context, tool result.Tool, r *chattyRun) (f result.ChattyFigures, saved *result.ChattyPlan, runErr, err error) {
	switch {
	case c.DSN != nil:
		f, runErr, err = c.measurePing(ctx, r)
	case c.Agent != nil:
		f, runErr, err = c.measureRR(ctx, tool, r)
	case c.From.Given():
		f, saved, err = ChattyFrom(c.From)
		r.target = c.From.Name
	default:
		f = result.ChattyFigures{Floor: result.Seconds(advisor.SameHostRTT), FloorFrom: advisor.SameHostFrom, RequestBytes: 64, ResponseBytes: 64}
		r.target = "assumed"
	}
	if err != nil {
		return f, nil, nil, err
	}
	if err := plan.ApplyChatty(&f, c.Assume); err != nil {
		return f, nil, nil, err
	}
	if f.NetworkRTT <= 0 {
		return f, nil, nil, errext.Userf(nil, "plan chatty: no network round trip to plan from: give it, e.g. --assume rtt=2ms")
	}
	return f, saved, runErr, nil
}

// measurePing runs db ping on DSN (with the agent beside the database,
// when given) and reads its figures.
func (c PlanChatty) measurePing(ctx context.Context, r *chattyRun) (result.ChattyFigures, error, error) {
	d := c.DSN
	cfg := dbping.Config{Query: "SELECT 1", Display: "SELECT 1", Duration: c.Duration, Interval: c.Duration, Queries: c.Queries,
		Timeout: c.Timeout, TCPProbes: 5}
	if c.Payload > 0 {
		cfg.PayloadBytes = c.Payload
		cfg.Query, cfg.Display = dbping.PayloadQuery(c.Payload), fmt.Sprintf("SELECT '<%d characters>'", c.Payload)
	}
	what := fmt.Sprintf("query round trips through the driver (db ping, %s, %s)", cfg.Display, metric.FlagDuration(c.Duration))
	if c.Agent != nil {
		if err := pingAgent(ctx, *c.Agent, &cfg, &r.unauth); err != nil {
			return result.ChattyFigures{}, nil, fmt.Errorf("plan chatty --to: %w", err)
		}
		what += ", then the network's through the agent at " + c.Agent.Addr
	}
	r.target = d.Redacted
	r.note(fmt.Sprintf("narrows plan chatty: step 1 of 1: %s", what))
	res, runErr := dbping.Run(ctx, d, cfg, func(result.Interval) {})
	if ctx.Err() != nil {
		return result.ChattyFigures{}, nil, ErrInterrupted
	}
	runErr = dbErr(runErr, d)
	if res == nil || res.Queries == 0 {
		if runErr == nil {
			runErr = errors.New("no query was answered")
		}
		return result.ChattyFigures{}, nil, runErr
	}
	f, err := advisor.ChattyFromDBPing(res, "on "+d.Redacted)
	if err != nil {
		return f, nil, fmt.Errorf("plan chatty: %v", err)
	}
	f.Measured = d.Redacted
	if n := res.Network; n != nil && n.AgentError != "" {
		r.note(fmt.Sprintf("narrows plan chatty: the agent could not be measured (%s): the network is known only between bounds", d.Scrub(n.AgentError)))
	}
	return f, runErr, nil
}

// measureRR runs net rr through Agent: the network alone.
func (c PlanChatty) measureRR(ctx context.Context, tool result.Tool, r *chattyRun) (result.ChattyFigures, error, error) {
	opts := *c.Agent
	req := int64(64)
	if c.Payload > 0 {
		req = c.Payload
	}
	sess, err := Connect(ctx, opts)
	if err != nil {
		return result.ChattyFigures{}, nil, err
	}
	defer sess.Close()
	r.software, r.unauth, r.target = sess.Software, !sess.Authenticated, opts.Addr
	r.agentFacts, r.hostFacts = sess.Facts, hostFacts(tool, sess.PeerIP())
	if most := sess.Limits.MaxDuration; most > 0 && c.Duration > most {
		return result.ChattyFigures{}, nil, errext.Userf(nil, "--duration %s: the agent at %s allows tests of up to %s (its --max-duration): use --duration %s or less",
			metric.FlagDuration(c.Duration), opts.Addr, metric.FlagDuration(most), metric.FlagDuration(most))
	}
	r.note(fmt.Sprintf("narrows plan chatty: step 1 of 1: the network's round trips through the agent (net rr, %s each way, %s)",
		requestSize(req), metric.FlagDuration(c.Duration)))
	res, runErr := rr.Run(ctx, sess, rr.Config{Request: req, Response: 64, Duration: c.Duration, Interval: c.Duration, Queries: c.Queries},
		func(result.Interval) {})
	if ctx.Err() != nil {
		return result.ChattyFigures{}, nil, ErrInterrupted
	}
	var refused *client.Refusal
	if errors.As(runErr, &refused) {
		return result.ChattyFigures{}, nil, fmt.Errorf("plan chatty: net rr: %w", runErr)
	}
	f, err := advisor.ChattyFromRR(res, "through the agent at "+opts.Addr)
	f.Measured = opts.Addr
	if err != nil {
		if runErr != nil {
			return f, nil, runErr
		}
		return f, nil, fmt.Errorf("plan chatty: %v", err)
	}
	return f, runErr, nil
}

func requestSize(req int64) string {
	if req == 64 {
		return "64 B"
	}
	return metric.FormatBytes(req) + " / 64 B"
}

// ChattyFrom reads the figures of the last run in a saved run that has
// them: a plan chatty's own (and that plan, whose queries, round trips
// and what-ifs stand for those not asked), a db ping's or a net rr's.
func ChattyFrom(saved plan.Saved) (result.ChattyFigures, *result.ChattyPlan, error) {
	path := saved.Name
	found := saved.Last(func(r *result.Report) bool { return r.ChattyPlan != nil || r.DBPing != nil || r.RR != nil })
	if found == nil {
		return result.ChattyFigures{}, nil, errext.Userf(nil, "--from %s: no net rr, db ping or plan chatty summary in it: save one with --json > FILE", path)
	}
	in := fmt.Sprintf("(saved in %s)", path)
	var f result.ChattyFigures
	var err error
	switch {
	case found.ChattyPlan != nil:
		f = found.ChattyPlan.Figures
		for _, s := range []*string{&f.NetworkFrom, &f.ServerAndClientFrom} {
			if *s != "" && *s != "assumed" {
				*s += " " + in
			}
		}
	case found.DBPing != nil:
		f, err = advisor.ChattyFromDBPing(found.DBPing, "on "+found.Target+" "+in)
		f.Measured = found.Target
	default:
		f, err = advisor.ChattyFromRR(found.RR, "to "+found.Target+" "+in)
		f.Measured = found.Target
	}
	if err != nil {
		return f, nil, errext.Userf(nil, "--from %s: %v", path, err)
	}
	if f.Floor == 0 && f.FloorFrom == "" {
		f.Floor, f.FloorFrom = result.Seconds(advisor.SameHostRTT), advisor.SameHostFrom
	}
	return f, found.ChattyPlan, nil
}
