package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/wakeup"
	"github.com/narrows/narrows/internal/untrusted"
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
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "Usage: narrows host [flags] [-- COMMAND [ARGS...]]\n"+
			"  With a COMMAND (a job of fixed work: pgbench -t, a report's script), this host's experiment runs it whole,\n"+
			"  again and again, as is and with the CPUs kept awake; --queries then says how many queries it issues.\n")
		printFlags(env.Stdout, fs)
	}
	job, args := jobArgs(args)
	if err := parse(fs, args); err != nil {
		return err
	}
	queriesSet := false
	fs.Visit(func(f *flag.Flag) { queriesSet = queriesSet || f.Name == "queries" })
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
	if job != nil {
		if cfg.Job, err = hostJob(job); err != nil {
			return err
		}
		if !queriesSet {
			cfg.Queries = 0
		}
	}
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

// jobArgs splits args at the first "--": the flags before it, the job's
// command line after it (nil: no "--").
func jobArgs(args []string) (job, flags []string) {
	for i, a := range args {
		if a == "--" {
			return args[i+1:], args[:i]
		}
	}
	return nil, args
}

// hostJob is the job's command line as the experiment runs it: the
// program found on PATH (or named by its path). The line itself is never
// printed (it may carry a password), only the program's name.
func hostJob(argv []string) (*wakeup.Job, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, usagef("host: nothing after --: give the job's command, e.g. narrows host -- pgbench -n -c 1 -t 50000 -f query.sql")
	}
	name := filepath.Base(argv[0])
	path, err := exec.LookPath(argv[0])
	if err != nil {
		why := err.Error()
		if e := (*exec.Error)(nil); errors.As(err, &e) && e.Err != nil {
			why = e.Err.Error()
		}
		return nil, usagef("host: the job's program %s cannot be run (%s): give its path, or install it", untrusted.Quote(name), why)
	}
	return &wakeup.Job{Path: path, Args: argv[1:], Name: untrusted.OneLine(untrusted.Text(name))}, nil
}
