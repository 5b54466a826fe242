package cli

import (
	"context"
	"strings"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
)

// syncFlags are `narrows plan sync`'s questions and how to measure.
type syncFlags struct {
	engines, opLog, opTime, from, to, dsn, logPath, remotePath, stage, diskSize, block string
	inFlight                                                                           int
	json                                                                               bool
	assume                                                                             multiFlag
	agent                                                                              agentFlags
}

func planSync(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "plan sync")
	cfg, measure := command.DefaultPlanSync(), command.DefaultSyncMeasure(client.Options{})
	var sf syncFlags
	fs.StringVar(&sf.engines, "engine", "postgres,sqlserver,mysql", "the engines to plan: postgres, sqlserver, mysql (comma-separated)")
	fs.StringVar(&sf.opLog, "op-log", "", "a maintenance operation's log, e.g. 7GB (an index rebuild's WAL): its time is planned too, with --op-time")
	fs.StringVar(&sf.opTime, "op-time", "", "the operation's time without a replica, e.g. 9s")
	fs.StringVar(&sf.from, "from", "", "plan from saved runs: JSON lines of `net commit`, `net rr`, `disk`, `db load` or `plan sync` with --json (later records override earlier)")
	fs.Var(&sf.assume, "assume", "a part given by hand (repeatable): commit=0.9ms (a commit today), local-flush=150us, rtt=10ms, remote-flush=150us, remote-write=20us, ack-flush=10.5ms, ack-write=10.3ms, throughput=11MB/s")
	fs.StringVar(&sf.to, "to", "", "measure the replica's side through this agent (`narrows serve --disk-path DIR` on the replica's host): HOST or HOST:PORT")
	sf.agent.register(fs)
	fs.StringVar(&sf.remotePath, "remote-path", "", "with --to: the directory on the agent to flush log blocks in, on the replica's log disk (default: the agent's first --disk-path)")
	fs.StringVar(&sf.block, "block", "1K", "with --to: the log one small commit ships to the replica, sent as one block (1K: a 1,000-byte row's WAL record and its commit)")
	fs.IntVar(&sf.inFlight, "in-flight", measure.InFlight, "with --to: log blocks of 64 KiB in flight when measuring a bulk operation's synchronous log throughput")
	fs.StringVar(&sf.logPath, "log-path", "", "measure the local log flush (8 KiB write + fdatasync) in this directory: the primary's log disk (pg_wal, the binary log, the .ldf)")
	fs.StringVar(&sf.dsn, "dsn", "", "measure a commit today on this primary: one session commits small rows into a scratch table narrows creates and drops (or set NARROWS_DSN)")
	fs.StringVar(&sf.stage, "stage-duration", metric.FlagDuration(cfg.Stage), "how long to measure each part")
	fs.StringVar(&sf.diskSize, "disk-size", "64M", "with --log-path: the test file's size")
	fs.BoolVar(&sf.json, "json", false, "write JSON lines instead of a table")
	var htmlPath string
	htmlFlag(fs, &htmlPath)
	if err := parse(fs, args); err != nil {
		return err
	}
	var err error
	if cfg.Assume, err = readAssume(sf.assume, plan.SyncAssumeNames, "rtt=10ms,throughput=11MB/s", plan.ApplySync); err != nil {
		return err
	}
	cfg.Engines = nil
	for _, e := range strings.Split(sf.engines, ",") {
		switch e = strings.ToLower(strings.TrimSpace(e)); e {
		case "postgres", "postgresql", "pg":
			cfg.Engines = append(cfg.Engines, result.SyncPostgres)
		case "sqlserver", "mssql":
			cfg.Engines = append(cfg.Engines, result.SyncSQLServer)
		case "mysql", "mariadb":
			cfg.Engines = append(cfg.Engines, result.SyncMySQL)
		default:
			return usagef("--engine %q: use postgres, sqlserver or mysql (comma-separated)", e)
		}
	}
	if (sf.opLog == "") != (sf.opTime == "") {
		return usagef("plan sync: an operation needs both --op-log (its log, e.g. 7GB) and --op-time (its time alone, e.g. 9s)")
	}
	if sf.opLog != "" {
		n, err := metric.ParseStorageSize(sf.opLog)
		if err != nil {
			return usagef("--op-log: %v", err)
		}
		cfg.OpLog = n
		if cfg.OpTime, err = positiveDuration("--op-time", sf.opTime); err != nil {
			return err
		}
	}
	if cfg.Stage, err = positiveDuration("--stage-duration", sf.stage); err != nil {
		return err
	}
	block, err := metric.ParseSize(sf.block)
	if err != nil || block < 512 || block > 1<<20 {
		return usagef("--block %q: %s", sf.block, errOr(err, "use 512 to 1M, e.g. 1K or 8K"))
	}
	if sf.inFlight < 2 || sf.inFlight > 1024 {
		return usagef("--in-flight %d: use 2 to 1024", sf.inFlight)
	}
	// NARROWS_DSN stands for --dsn only in a plan that measures: alone it
	// does not make an offline plan measure.
	dsn := sf.dsn
	if dsn == "" && (sf.to != "" || sf.logPath != "") {
		dsn = env.Getenv("NARROWS_DSN")
	}
	if sf.from == "" && len(sf.assume) == 0 && sf.to == "" && sf.logPath == "" && dsn == "" {
		return usagef("plan sync: give the parts: measure them (--to AGENT for the replica's side, --log-path DIR for the local flush, --dsn for a commit today), read them --from a saved run, or --assume them (e.g. --assume rtt=10ms)")
	}
	if sf.logPath != "" {
		if err := probe.CheckDir("--log-path", sf.logPath, true); err != nil {
			return err
		}
	}
	if sf.remotePath != "" && sf.to == "" {
		return usagef("plan sync: --remote-path is on the agent: give --to AGENT too")
	}
	if sf.from != "" {
		cfg.From, err = readSaved(sf.from, func(s plan.Saved) error { _, err := command.SyncPartsFrom(s); return err })
		if err != nil {
			return err
		}
	}
	if dsn != "" {
		if cfg.DSN, err = dsnOf("plan sync", "--dsn", dsn); err != nil {
			return err
		}
	}
	if sf.logPath != "" {
		size, err := metric.ParseSize(sf.diskSize)
		if err != nil || size < disk.MinSize {
			return usagef("--disk-size %q: %s", sf.diskSize, errOr(err, "use at least 1M"))
		}
		cfg.LogPath, cfg.DiskSize = sf.logPath, size
	}
	if sf.to != "" {
		opts, err := sf.agent.options(env, "--to", sf.to)
		if err != nil {
			return err
		}
		measure.Agent, measure.To, measure.RemotePath, measure.Block, measure.InFlight = opts, sf.to, sf.remotePath, block, sf.inFlight
		cfg.Measure = &measure
	}
	out := withHTML(output(env, sf.json), htmlPath)
	rep, err := cfg.Run(ctx, coreEnv(env, out, sf.json))
	return written(ctx, out, rep, err)
}
