package cli

import (
	"context"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
)

// hostCmd is `narrows host`: what each end's own machine adds to a round
// trip, by experiment on this host and, with --to, the agent's.
func hostCmd(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "host")
	to := fs.String("to", "", "the agent: HOST or HOST:PORT (default port 7447); without it, this host only")
	var af agentFlags
	af.register(fs)
	duration := fs.String("duration", "40s", "the most each machine's experiment may take (it ends sooner once judged), at least "+metric.FlagDuration(command.MinHostDuration))
	queries := fs.Int64("queries", 5000, "for the arithmetic: how many queries a report issues")
	tryCoalescing := fs.Bool("try-coalescing", false, "then what the agent's receive interrupt coalescing adds to a round trip, as net rr --try-coalescing (with --to; the agent needs --allow-try)")
	dsn := fs.String("dsn", "", "time this host's experiment on this database's own queries (SELECT 1 in its protocol, as libpq and the MySQL client send it) instead of narrows' two threads: postgres://USER:PASSWORD@HOST:5432/DB or mysql://USER:PASSWORD@HOST:3306/DB (Linux)")
	asJSON := fs.Bool("json", false, "write the summary as JSON instead of a table")
	var html string
	htmlFlag(fs, &html)
	if err := parse(fs, args); err != nil {
		return err
	}
	var opts *client.Options
	if *to != "" {
		o, err := af.to(env, *to)
		if err != nil {
			return err
		}
		opts = &o
	}
	d, err := positiveDuration("--duration", *duration)
	if err != nil {
		return err
	}
	if *queries <= 0 {
		return usagef("--queries %d: must be more than zero", *queries)
	}
	if *tryCoalescing && opts == nil {
		return usagef("--try-coalescing changes the NIC of the agent's host: give the agent with --to")
	}
	cfg := command.DefaultHost(opts)
	cfg.Duration, cfg.Queries, cfg.TryCoalescing = d, *queries, *tryCoalescing
	if *dsn != "" {
		if cfg.DSN, err = dsnOf("host", "--dsn", *dsn); err != nil {
			return err
		}
		if cfg.DSN.Engine == dbconn.SQLServer {
			return usagef("host: --dsn %s: SQL Server's queries cannot be timed so (its protocol, TDS, is its driver's alone here): run narrows host without --dsn, and db ping for its round trips", cfg.DSN.Redacted)
		}
		if cfg.Timeout, err = positiveDuration("--timeout", af.timeout); err != nil {
			return err
		}
	}
	out := withHTML(output(env, *asJSON), html)
	rep, err := cfg.Run(ctx, coreEnv(env, out, *asJSON))
	return written(ctx, out, rep, err)
}
