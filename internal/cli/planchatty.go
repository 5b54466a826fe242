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
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/dbping"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
)

// defaultWhatIf is the what-if when no --rtt is given: the application
// server in the database's rack.
const defaultWhatIf = 200 * time.Microsecond

// chattyFlags are `narrows plan chatty`'s questions and where its figures
// come from: a measurement (--dsn, --to), a saved run (--from) or by hand
// (--assume), the later overriding the earlier.
type chattyFlags struct {
	queries                           int64
	roundTrips                        int
	rtts, assume                      multiFlag
	to, dsn, duration, payload, from  string
	json                              bool
	agent                             agentFlags
	queriesSet, roundTripsSet, rttSet bool

	// Read from the flags (check), and from a saved plan (readFrom).
	parsedRTTs               []time.Duration
	payloadBytes             int64
	measureFor               time.Duration
	dsnFromEnv               bool
	savedQueries, savedTrips int64
	savedRTTs                []time.Duration

	// What the report says of the measurement.
	agentSoftware, target string
	agentFacts            *result.Facts // the agent's host, when it told them
	hostFacts             *result.Facts // this host's, routed to the agent
	unauth                bool
}

func planChatty(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "plan chatty")
	var cf chattyFlags
	fs.Int64Var(&cf.queries, "queries", 5000, "how many queries the report (the page, the batch) sends one after another in one session")
	fs.IntVar(&cf.roundTrips, "round-trips-per-query", 1, "round trips each query makes: 1 for a plain query; 2 or 3 for a driver that prepares or describes each statement first, or an ORM that wraps each in BEGIN and COMMIT")
	fs.Var(&cf.rtts, "rtt", "what if the network's round trip were this (repeatable, or a list): 200us (the application server next to the database), 10ms (another site); default 200us")
	fs.StringVar(&cf.dsn, "dsn", "", "measure query round trips through the real driver (db ping, with its network/server split) on this database (or set NARROWS_DSN)")
	fs.StringVar(&cf.to, "to", "", "measure the network's round trip through this agent (narrows serve): with --dsn, the agent beside the database that splits network from server; alone, net rr (the network only)")
	cf.agent.register(fs)
	fs.StringVar(&cf.duration, "duration", "5s", "with --dsn or --to: how long to measure")
	fs.StringVar(&cf.payload, "payload", "", "with --dsn: send SELECT '<N characters>' instead of SELECT 1 (500, as field report 002 did); with --to alone: requests of N bytes (default 64)")
	fs.StringVar(&cf.from, "from", "", "plan from a saved run: the JSON lines of a `net rr`, `db ping` or `plan chatty` --json")
	fs.Var(&cf.assume, "assume", "figures given by hand, over what was measured or read (repeatable, or a list): rtt=2ms (the network's round trip), "+
		"server=150us (a query's time on the server and in the drivers), floor=20us (a same-host round trip), request=500B, response=600B")
	fs.BoolVar(&cf.json, "json", false, "write JSON lines instead of a table")
	var htmlPath string
	htmlFlag(fs, &htmlPath)
	if err := parse(fs, args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		cf.queriesSet = cf.queriesSet || f.Name == "queries"
		cf.roundTripsSet = cf.roundTripsSet || f.Name == "round-trips-per-query"
		cf.rttSet = cf.rttSet || f.Name == "rtt"
	})
	if err := cf.check(env); err != nil {
		return err
	}
	figures, runErr, err := cf.figures(ctx, env)
	if err != nil {
		return err
	}
	in := advisor.ChattyInput{Figures: figures, Queries: cf.queries, RoundTripsPerQuery: cf.roundTrips, RTTs: cf.parsedRTTs}
	if cf.from != "" {
		if !cf.queriesSet && cf.savedQueries > 0 {
			in.Queries = cf.savedQueries
		}
		if !cf.roundTripsSet && cf.savedTrips > 0 {
			in.RoundTripsPerQuery = int(cf.savedTrips)
		}
		if !cf.rttSet && cf.savedRTTs != nil {
			in.RTTs = cf.savedRTTs
		}
	}
	plan, err := advisor.PlanChatty(in)
	if err != nil {
		return usagef("plan chatty: %v", err)
	}
	rep := result.NewReport("plan chatty", cf.target, tool(), env.Now())
	rep.Agent, rep.Unauthenticated = cf.agentSoftware, cf.unauth
	rep.Facts, rep.AgentFacts = cf.hostFacts, cf.agentFacts
	rep.ChattyPlan = &plan
	return finish(ctx, withHTML(output(env, cf.json), htmlPath), rep, runErr)
}

// check reads every flag before anything is measured: a mistake is one
// line and exit 2 at once, not after the measurement.
func (cf *chattyFlags) check(env Env) error {
	switch {
	case cf.queries < 1:
		return usagef("--queries %d: must be at least 1", cf.queries)
	case cf.roundTrips < 1 || cf.roundTrips > advisor.MaxRoundTripsPerQuery:
		return usagef("--round-trips-per-query %d: use 1 to %d", cf.roundTrips, advisor.MaxRoundTripsPerQuery)
	}
	for _, v := range cf.rtts {
		for _, s := range strings.Split(v, ",") {
			d, err := positiveDuration("--rtt", strings.TrimSpace(s))
			if err != nil {
				return err
			}
			cf.parsedRTTs = append(cf.parsedRTTs, d)
		}
	}
	if len(cf.parsedRTTs) == 0 {
		cf.parsedRTTs = []time.Duration{defaultWhatIf}
	}
	// The syntax of --assume, checked on an empty set of figures.
	var scratch result.ChattyFigures
	if err := applyAssume(&scratch, cf.assume); err != nil {
		return err
	}
	if cf.dsn == "" && cf.from == "" && len(cf.assume) == 0 {
		cf.dsn, cf.dsnFromEnv = env.Getenv("NARROWS_DSN"), true
	}
	measuring := cf.dsn != "" || cf.to != ""
	switch {
	case cf.from != "" && measuring:
		return usagef("plan chatty: --from and --dsn/--to: plan from the saved run or measure, not both")
	case !measuring && cf.from == "" && len(cf.assume) == 0:
		return usagef("plan chatty: give the figures: measure them (--dsn DSN: query round trips; --to AGENT: the network's), read them --from a saved run, or --assume them (e.g. --assume rtt=2ms,server=150us)")
	}
	if measuring {
		d, err := positiveDuration("--duration", cf.duration)
		if err != nil {
			return err
		}
		cf.measureFor = d
	}
	if cf.payload != "" {
		n, err := metric.ParseSize(cf.payload)
		if err != nil {
			return usagef("--payload: %v", err)
		}
		if n < 1 || n > 1<<20 {
			return usagef("--payload %s: use 1 byte to 1M", cf.payload)
		}
		if !measuring {
			return usagef("--payload is the query measured: give --dsn or --to too, or the sizes by hand (--assume request=500B,response=600B)")
		}
		cf.payloadBytes = n
	}
	return nil
}

// figures measures, reads or takes by hand the figures to plan from. A
// measurement that failed part way (runErr) still gives what it
// measured; err is a failure with nothing to plan from.
func (cf *chattyFlags) figures(ctx context.Context, env Env) (f result.ChattyFigures, runErr, err error) {
	switch {
	case cf.dsn != "":
		f, runErr, err = cf.measurePing(ctx, env)
	case cf.to != "":
		f, runErr, err = cf.measureRR(ctx, env)
	case cf.from != "":
		f, err = cf.readFrom()
		cf.target = cf.from
	default:
		f = result.ChattyFigures{Floor: result.Seconds(advisor.SameHostRTT), FloorFrom: advisor.SameHostFrom, RequestBytes: 64, ResponseBytes: 64}
		cf.target = "assumed"
	}
	if err != nil {
		return f, nil, err
	}
	if err := applyAssume(&f, cf.assume); err != nil {
		return f, nil, err
	}
	if f.NetworkRTT <= 0 {
		return f, nil, usagef("plan chatty: no network round trip to plan from: give it, e.g. --assume rtt=2ms")
	}
	return f, runErr, nil
}

// measurePing runs db ping on --dsn (with the agent of --to beside the
// database, when given) and reads its figures.
func (cf *chattyFlags) measurePing(ctx context.Context, env Env) (result.ChattyFigures, error, error) {
	d, err := dbconn.Parse(cf.dsn)
	if err != nil {
		from := "--dsn"
		if cf.dsnFromEnv {
			from = "NARROWS_DSN"
		}
		return result.ChattyFigures{}, nil, usagef("plan chatty: %s: %v", from, err)
	}
	timeout, err := positiveDuration("--timeout", cf.agent.timeout)
	if err != nil {
		return result.ChattyFigures{}, nil, err
	}
	cfg := dbping.Config{Query: "SELECT 1", Display: "SELECT 1", Duration: cf.measureFor, Interval: cf.measureFor, Queries: cf.queries,
		Timeout: timeout, TCPProbes: 5}
	if cf.payloadBytes > 0 {
		cfg.PayloadBytes = cf.payloadBytes
		cfg.Query, cfg.Display = dbping.PayloadQuery(cf.payloadBytes), fmt.Sprintf("SELECT '<%d characters>'", cf.payloadBytes)
	}
	what := fmt.Sprintf("query round trips through the driver (db ping, %s, %s)", cfg.Display, metric.FlagDuration(cf.measureFor))
	if cf.to != "" {
		opts, err := cf.agent.options(env, "--to", cf.to)
		if err != nil {
			return result.ChattyFigures{}, nil, err
		}
		if err := pingAgent(ctx, opts, &cfg, &cf.unauth); err != nil {
			return result.ChattyFigures{}, nil, fmt.Errorf("plan chatty --to: %w", err)
		}
		what += ", then the network's through the agent at " + opts.Addr
	}
	cf.target = d.Redacted
	fmt.Fprintf(env.Stderr, "narrows plan chatty: step 1 of 1: %s\n", what)
	res, runErr := dbping.Run(ctx, d, cfg, func(result.Interval) {})
	if ctx.Err() != nil {
		return result.ChattyFigures{}, nil, errInterrupted
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
	if n := res.Network; n != nil && n.AgentError != "" {
		fmt.Fprintf(env.Stderr, "narrows plan chatty: the agent could not be measured (%s): the network is known only between bounds\n", d.Scrub(n.AgentError))
	}
	return f, runErr, nil
}

// measureRR runs net rr through the agent of --to: the network alone.
func (cf *chattyFlags) measureRR(ctx context.Context, env Env) (result.ChattyFigures, error, error) {
	opts, err := cf.agent.options(env, "--to", cf.to)
	if err != nil {
		return result.ChattyFigures{}, nil, err
	}
	req := int64(64)
	if cf.payloadBytes > 0 {
		req = cf.payloadBytes
	}
	sess, err := connect(ctx, opts)
	if err != nil {
		return result.ChattyFigures{}, nil, err
	}
	defer sess.Close()
	cf.agentSoftware, cf.unauth, cf.target = sess.Software, !sess.Authenticated, opts.Addr
	cf.agentFacts, cf.hostFacts = sess.Facts, hostFacts(sess.PeerIP())
	if most := sess.Limits.MaxDuration; most > 0 && cf.measureFor > most {
		return result.ChattyFigures{}, nil, usagef("--duration %s: the agent at %s allows tests of up to %s (its --max-duration): use --duration %s or less",
			metric.FlagDuration(cf.measureFor), opts.Addr, metric.FlagDuration(most), metric.FlagDuration(most))
	}
	fmt.Fprintf(env.Stderr, "narrows plan chatty: step 1 of 1: the network's round trips through the agent (net rr, %s each way, %s)\n",
		requestSize(req), metric.FlagDuration(cf.measureFor))
	res, runErr := rr.Run(ctx, sess, rr.Config{Request: req, Response: 64, Duration: cf.measureFor, Interval: cf.measureFor, Queries: cf.queries},
		func(result.Interval) {})
	if ctx.Err() != nil {
		return result.ChattyFigures{}, nil, errInterrupted
	}
	var refused *client.Refusal
	if errors.As(runErr, &refused) {
		return result.ChattyFigures{}, nil, fmt.Errorf("plan chatty: net rr: %w", runErr)
	}
	f, err := advisor.ChattyFromRR(res, "through the agent at "+opts.Addr)
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

// readFrom reads the figures of the last run in a saved file that has
// them: a plan chatty's own, a db ping's or a net rr's.
func (cf *chattyFlags) readFrom() (result.ChattyFigures, error) {
	path := cf.from
	found, err := lastSummary(path, func(r *result.Report) bool { return r.ChattyPlan != nil || r.DBPing != nil || r.RR != nil })
	if err != nil {
		return result.ChattyFigures{}, err
	}
	if found == nil {
		return result.ChattyFigures{}, usagef("--from %s: no net rr, db ping or plan chatty summary in it: save one with --json > FILE", path)
	}
	saved := fmt.Sprintf("(saved in %s)", path)
	var f result.ChattyFigures
	switch {
	case found.ChattyPlan != nil:
		p := found.ChattyPlan
		f = p.Figures
		for _, s := range []*string{&f.NetworkFrom, &f.ServerAndClientFrom} {
			if *s != "" && *s != "assumed" {
				*s += " " + saved
			}
		}
		cf.savedQueries, cf.savedTrips = p.Queries, int64(p.RoundTripsPerQuery)
		for _, c := range p.Cases {
			if c.Case == result.ChattyRTT {
				cf.savedRTTs = append(cf.savedRTTs, c.RTT.D())
			}
		}
	case found.DBPing != nil:
		f, err = advisor.ChattyFromDBPing(found.DBPing, "on "+found.Target+" "+saved)
	default:
		f, err = advisor.ChattyFromRR(found.RR, "to "+found.Target+" "+saved)
	}
	if err != nil {
		return f, usagef("--from %s: %v", path, err)
	}
	if f.Floor == 0 && f.FloorFrom == "" {
		f.Floor, f.FloorFrom = result.Seconds(advisor.SameHostRTT), advisor.SameHostFrom
	}
	return f, nil
}

// applyAssume sets the figures --assume gives: the network's round trip
// replaced (what the server and drivers take is kept), or the rest, the
// floor, the sizes. A figure given by hand ends the bounds a db ping
// measured: the query's time no longer splits between them.
func applyAssume(f *result.ChattyFigures, flags []string) error {
	as, err := plan.ParseAssume(flags, []string{"rtt", "server", "floor", "request", "response"}, "rtt=2ms,server=150us")
	if err != nil {
		return usagef("%v", err)
	}
	for _, a := range as {
		switch a.Name {
		case "rtt", "server", "floor":
			d, err := a.Duration(a.Name == "server")
			if err != nil {
				return usagef("%v", err)
			}
			s := result.Seconds(d)
			switch a.Name {
			case "rtt":
				f.NetworkRTT, f.NetworkFrom = s, "assumed"
				f.QueryRTT, f.QueryRTTMean = nil, nil
			case "server":
				f.ServerAndClient, f.ServerAndClientFrom = &s, "assumed"
				f.QueryRTT, f.QueryRTTMean = nil, nil
			case "floor":
				f.Floor, f.FloorFrom = s, "assumed"
			}
			if a.Name != "floor" {
				f.NetworkRTTLow, f.NetworkRTTHigh = nil, nil
			}
		case "request", "response":
			n, err := a.Size(1, 1<<30)
			if err != nil {
				return usagef("%v", err)
			}
			if a.Name == "request" {
				f.RequestBytes = n
			} else {
				f.ResponseBytes = n
			}
		}
	}
	return nil
}
