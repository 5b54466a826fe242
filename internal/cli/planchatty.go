package cli

import (
	"context"
	"flag"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
)

// chattyFlags are `narrows plan chatty`'s questions and where its figures
// come from: a measurement (--dsn, --to), a saved run (--from) or by hand
// (--assume), the later overriding the earlier.
type chattyFlags struct {
	queries              int64
	roundTrips           int
	rtts, assume         multiFlag
	to, dsn, duration    string
	request, from        string
	json                 bool
	agent                agentFlags
	dsnFromEnv, measured bool
}

func planChatty(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "plan chatty")
	cfg := command.DefaultPlanChatty()
	var cf chattyFlags
	fs.Int64Var(&cf.queries, "queries", cfg.Queries, "how many queries the report (the page, the batch) sends one after another in one session")
	fs.IntVar(&cf.roundTrips, "round-trips-per-query", cfg.RoundTripsPerQuery, "round trips each query makes: 1 for a plain query; 2 or 3 for a driver that prepares or describes each statement first, or an ORM that wraps each in BEGIN and COMMIT")
	fs.Var(&cf.rtts, "rtt", "what if the network's round trip were this (repeatable, or a list): 200us (the application server next to the database), 10ms (another site); default 200us")
	fs.StringVar(&cf.dsn, "dsn", "", "measure query round trips through the real driver (db ping, with its network/server split) on this database (or set NARROWS_DSN)")
	fs.StringVar(&cf.to, "to", "", "measure the network's round trip through this agent (narrows serve): with --dsn, the agent beside the database that splits network from server; alone, net rr (the network only)")
	cf.agent.register(fs)
	fs.StringVar(&cf.duration, "duration", metric.FlagDuration(cfg.Duration), "with --dsn or --to: how long to measure")
	stringFlag(fs, &cf.request, "request", "", "with --dsn: send SELECT '<N characters>' instead of SELECT 1 (500, as field report 002 did); with --to alone: requests of N bytes (default 64)", "payload")
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
		cfg.QueriesAsked = cfg.QueriesAsked || f.Name == "queries"
		cfg.RoundTripsAsked = cfg.RoundTripsAsked || f.Name == "round-trips-per-query"
		cfg.RTTsAsked = cfg.RTTsAsked || f.Name == "rtt"
	})
	if err := cf.check(env, &cfg); err != nil {
		return err
	}
	if err := cf.sources(env, &cfg); err != nil {
		return err
	}
	out := withHTML(output(env, cf.json), htmlPath)
	rep, err := cfg.Run(ctx, coreEnv(env, out, cf.json))
	return written(ctx, out, rep, err)
}

// check reads every flag before anything is measured: a mistake is one
// line and exit 2 at once, not after the measurement.
func (cf *chattyFlags) check(env Env, cfg *command.PlanChatty) error {
	switch {
	case cf.queries < 1:
		return usagef("--queries %d: must be at least 1", cf.queries)
	case cf.roundTrips < 1 || cf.roundTrips > advisor.MaxRoundTripsPerQuery:
		return usagef("--round-trips-per-query %d: use 1 to %d", cf.roundTrips, advisor.MaxRoundTripsPerQuery)
	}
	cfg.Queries, cfg.RoundTripsPerQuery, cfg.RTTs = cf.queries, cf.roundTrips, nil
	for _, v := range cf.rtts {
		for _, s := range strings.Split(v, ",") {
			d, err := positiveDuration("--rtt", strings.TrimSpace(s))
			if err != nil {
				return err
			}
			cfg.RTTs = append(cfg.RTTs, d)
		}
	}
	if len(cfg.RTTs) == 0 {
		cfg.RTTs = []time.Duration{command.DefaultWhatIf}
	}
	var err error
	if cfg.Assume, err = readAssume(cf.assume, plan.ChattyAssumeNames, "rtt=2ms,server=150us", plan.ApplyChatty); err != nil {
		return err
	}
	if cf.dsn == "" && cf.from == "" && len(cf.assume) == 0 {
		cf.dsn, cf.dsnFromEnv = env.Getenv("NARROWS_DSN"), true
	}
	cf.measured = cf.dsn != "" || cf.to != ""
	switch {
	case cf.from != "" && cf.measured:
		return usagef("plan chatty: --from and --dsn/--to: plan from the saved run or measure, not both")
	case !cf.measured && cf.from == "" && len(cf.assume) == 0:
		return usagef("plan chatty: give the figures: measure them (--dsn DSN: query round trips; --to AGENT: the network's), read them --from a saved run, or --assume them (e.g. --assume rtt=2ms,server=150us)")
	}
	if cf.measured {
		d, err := positiveDuration("--duration", cf.duration)
		if err != nil {
			return err
		}
		cfg.Duration = d
	}
	if cf.request != "" {
		n, err := metric.ParseSize(cf.request)
		if err != nil {
			return usagef("--request: %v", err)
		}
		if n < 1 || n > 1<<20 {
			return usagef("--request %s: use 1 byte to 1M", cf.request)
		}
		if !cf.measured {
			return usagef("--request is the query measured: give --dsn or --to too, or the sizes by hand (--assume request=500B,response=600B)")
		}
		cfg.Payload = n
	}
	return nil
}

// sources reads where the figures come from: the database and the agent
// measured, or the saved run.
func (cf *chattyFlags) sources(env Env, cfg *command.PlanChatty) error {
	if cf.dsn != "" {
		from := "--dsn"
		if cf.dsnFromEnv {
			from = "NARROWS_DSN"
		}
		d, err := dsnOf("plan chatty", from, cf.dsn)
		if err != nil {
			return err
		}
		if cfg.Timeout, err = positiveDuration("--timeout", cf.agent.timeout); err != nil {
			return err
		}
		cfg.DSN = d
	}
	if cf.to != "" {
		opts, err := cf.agent.options(env, "--to", cf.to)
		if err != nil {
			return err
		}
		cfg.Agent = &opts
	}
	if cf.from != "" && !cf.measured {
		saved, err := readSaved(cf.from, nil)
		if err != nil {
			return err
		}
		cfg.From = saved
	}
	return nil
}
