package cli

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/result"
)

// replicaPlanFlags are `narrows plan replica`'s questions. The log rate comes
// from the primary (--dsn), a saved run (--from) or by hand (--log-rate,
// --assume); the stream from the agent on the replica's host (--to), a
// saved run or by hand: the later overriding the earlier.
type replicaPlanFlags struct {
	to, dsn, watch, peak, rtt, stage, from string
	streams                                int
	logFactor                              float64
	json                                   bool
	logRates, assume                       multiFlag
	agent                                  agentFlags
}

func planReplica(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "plan replica")
	cfg, measure := command.DefaultPlanReplica(), command.DefaultReplicaMeasure(client.Options{})
	var rf replicaPlanFlags
	fs.StringVar(&rf.to, "to", "", "measure one stream through this agent (`narrows serve` on the replica's host): HOST or HOST:PORT")
	rf.agent.register(fs)
	fs.StringVar(&rf.dsn, "dsn", "", "read the log rate on the primary for --watch (PostgreSQL: pg_current_wal_lsn(); MySQL/MariaDB: the binary logs; SQL Server: each database's Log Bytes Flushed/sec); NARROWS_DSN is read when no rate is given otherwise")
	fs.StringVar(&rf.watch, "watch", "60s", "with --dsn: how long to read the log rate (its mean, and its peak second)")
	fs.Var(&rf.logRates, "log-rate", "the log rate by hand instead: MEAN or MEAN,PEAK (e.g. 5MB/s or 3MB/s,8MB/s); SQL Server, per database and repeatable: Sales=3MB/s,8MB/s")
	fs.StringVar(&rf.peak, "peak", metric.FlagDuration(cfg.PeakDuration), "how long a peak lasts: the RPO is the send queue at its end")
	fs.StringVar(&rf.rtt, "rtt", "", "what if the replica were this far away (a DR site), e.g. 80ms: one stream's capacity at that RTT")
	fs.Float64Var(&rf.logFactor, "log-factor", cfg.LogFactor, "what if the log rate were this many times higher (1: no such what-if)")
	fs.StringVar(&rf.stage, "stage-duration", metric.FlagDuration(measure.Stage), "with --to: how long to measure the stream (and the N streams)")
	fs.IntVar(&rf.streams, "streams", measure.Streams, "with --to: the parallel streams measured after one, for the link the databases share (1: one stream only)")
	fs.StringVar(&rf.from, "from", "", "re-plan from a saved run: the JSON lines of `narrows net stream --json` (to the replica's host) and/or of an earlier `plan replica --json`")
	fs.Var(&rf.assume, "assume", "figures given by hand (repeatable, comma-separated): stream=2MB/s (one stream's capacity), rtt=40ms, window=80KB (the peer's), "+
		"limit=window|link|loss|cpu, loss=0.1% (bytes sent again), mss=1448, link=100Mbit/s (N streams), rmem=6MiB (the replica host's tcp_rmem maximum), wmem=4MiB (the primary's tcp_wmem maximum), log=5MB/s, peak=8MB/s")
	fs.BoolVar(&rf.json, "json", false, "write JSON lines instead of a table")
	var htmlPath string
	htmlFlag(fs, &htmlPath)
	if err := parse(fs, args); err != nil {
		return err
	}
	set := given(fs)
	var err error
	if cfg.PeakDuration, err = positiveDuration("--peak", rf.peak); err != nil {
		return err
	}
	if rf.rtt != "" {
		if cfg.RTT, err = positiveDuration("--rtt", rf.rtt); err != nil {
			return err
		}
	}
	if math.IsNaN(rf.logFactor) || rf.logFactor < 0 || rf.logFactor > 1000 {
		return usagef("--log-factor %v: use 1 (none) to 1000", rf.logFactor)
	}
	cfg.LogFactor = rf.logFactor
	if cfg.LogRates, err = logRatesOf(rf.logRates); err != nil {
		return err
	}
	cfg.Assume, err = readAssume(rf.assume, plan.ReplicaAssumeNames, "stream=2MB/s,rtt=40ms", func(_ *struct{}, as []plan.Assumption) error {
		_, err := plan.ReadReplica(as)
		return err
	})
	if err != nil {
		return err
	}
	if rf.to == "" && (set["stage-duration"] || set["streams"]) {
		return usagef("plan replica: --stage-duration and --streams are for measuring through an agent: give --to AGENT too")
	}
	if rf.dsn == "" && set["watch"] {
		return usagef("plan replica: --watch is how long to read the primary: give --dsn too")
	}
	var savedLog []result.LogRate
	if rf.from != "" {
		// Whether it holds a log rate says whether NARROWS_DSN is read.
		cfg.From, err = readSaved(rf.from, func(s plan.Saved) (err error) {
			_, savedLog, _, err = command.ReplicaFrom(s)
			return err
		})
		if err != nil {
			return err
		}
	}
	// What is measured, checked before anything runs.
	raw := rf.dsn
	assumedLog := slices.ContainsFunc(cfg.Assume, func(a plan.Assumption) bool { return a.Name == "log" })
	if raw == "" && len(cfg.LogRates) == 0 && len(savedLog) == 0 && !assumedLog {
		raw = env.Getenv("NARROWS_DSN")
	}
	if raw != "" {
		if cfg.DSN, err = dsnOf("plan replica", "--dsn", raw); err != nil {
			return err
		}
		if cfg.Watch, err = positiveDuration("--watch", rf.watch); err != nil {
			return err
		}
		if cfg.Watch < 2*time.Second {
			return usagef("--watch %s: watch at least 2s (the rate is read every second)", rf.watch)
		}
	}
	if rf.to != "" {
		stage, err := positiveDuration("--stage-duration", rf.stage)
		if err != nil {
			return err
		}
		if rf.streams < 1 || rf.streams > 128 {
			return usagef("--streams %d: use 1 to 128", rf.streams)
		}
		opts, err := rf.agent.options(env, "--to", rf.to)
		if err != nil {
			return err
		}
		measure.Agent, measure.To, measure.Stage, measure.Streams = opts, rf.to, stage, rf.streams
		cfg.Measure = &measure
	}
	out := withHTML(output(env, rf.json), htmlPath)
	rep, err := cfg.Run(ctx, coreEnv(env, out, rf.json))
	return written(ctx, out, rep, err)
}

// logRatesOf reads --log-rate: [DATABASE=]MEAN[,PEAK].
func logRatesOf(vals []string) ([]result.LogRate, error) {
	var out []result.LogRate
	named := 0
	for _, v := range vals {
		db, rates := "", v
		if name, rest, ok := strings.Cut(v, "="); ok {
			db, rates = strings.TrimSpace(name), rest
			if db == "" {
				return nil, usagef("--log-rate %q: the database's name is missing before =", v)
			}
			named++
		}
		meanS, peakS, hasPeak := strings.Cut(rates, ",")
		mean, err := metric.ParseRate(meanS)
		if err != nil {
			return nil, usagef("--log-rate %q: %v", v, err)
		}
		peak := mean
		if hasPeak {
			if peak, err = metric.ParseRate(peakS); err != nil {
				return nil, usagef("--log-rate %q: the peak: %v", v, err)
			}
			if peak < mean {
				return nil, usagef("--log-rate %q: the peak %s is below the mean %s: give MEAN,PEAK", v, metric.FormatByteRate(peak), metric.FormatByteRate(mean))
			}
		}
		for _, o := range out {
			if o.Database == db {
				return nil, usagef("--log-rate %q: %s is given twice", v, dbWord(db))
			}
		}
		out = append(out, result.LogRate{Database: db, Mean: mean, Peak: peak, Source: "assumed"})
	}
	if named > 0 && named < len(out) {
		return nil, usagef("--log-rate: name every database (Sales=3MB/s) or none")
	}
	return out, nil
}

func dbWord(db string) string {
	if db == "" {
		return "the server's rate"
	}
	return "database " + db
}
