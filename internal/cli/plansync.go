package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe"
	commitprobe "github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/probe/dbload"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// syncFlags are `narrows plan sync`'s questions and how to measure.
type syncFlags struct {
	engines, opLog, opTime, from, to, dsn, logPath, remotePath, stage, diskSize, block string
	inFlight                                                                           int
	commitBytes                                                                        int64
	json                                                                               bool
	assume                                                                             multiFlag
	agent                                                                              agentFlags
}

func planSync(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "plan sync")
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
	fs.IntVar(&sf.inFlight, "in-flight", 32, "with --to: log blocks of 64 KiB in flight when measuring a bulk operation's synchronous log throughput")
	fs.StringVar(&sf.logPath, "log-path", "", "measure the local log flush (8 KiB write + fdatasync) in this directory: the primary's log disk (pg_wal, the binary log, the .ldf)")
	fs.StringVar(&sf.dsn, "dsn", "", "measure a commit today on this primary: one session commits small rows into a scratch table narrows creates and drops (or set NARROWS_DSN)")
	fs.StringVar(&sf.stage, "stage-duration", "5s", "how long to measure each part")
	fs.StringVar(&sf.diskSize, "disk-size", "64M", "with --log-path: the test file's size")
	fs.BoolVar(&sf.json, "json", false, "write JSON lines instead of a table")
	var htmlPath string
	htmlFlag(fs, &htmlPath)
	if err := parse(fs, args); err != nil {
		return err
	}
	assumed, err := readAssume(sf.assume, syncAssumeNames, "rtt=10ms,throughput=11MB/s", applySyncAssume)
	if err != nil {
		return err
	}
	in := advisor.SyncInput{}
	for _, e := range strings.Split(sf.engines, ",") {
		switch e = strings.ToLower(strings.TrimSpace(e)); e {
		case "postgres", "postgresql", "pg":
			in.Engines = append(in.Engines, result.SyncPostgres)
		case "sqlserver", "mssql":
			in.Engines = append(in.Engines, result.SyncSQLServer)
		case "mysql", "mariadb":
			in.Engines = append(in.Engines, result.SyncMySQL)
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
		in.OpLog = n
		if in.OpTime, err = positiveDuration("--op-time", sf.opTime); err != nil {
			return err
		}
	}
	dur, err := positiveDuration("--stage-duration", sf.stage)
	if err != nil {
		return err
	}
	block, err := metric.ParseSize(sf.block)
	if err != nil || block < 512 || block > 1<<20 {
		return usagef("--block %q: %s", sf.block, errOr(err, "use 512 to 1M, e.g. 1K or 8K"))
	}
	sf.commitBytes = block
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
		if err := syncPartsFrom(sf.from, &in.Parts); err != nil {
			return err
		}
	}
	target := "assumed"
	if sf.from != "" {
		target = sf.from
	}
	var software string
	var unauth bool
	if sf.to != "" || sf.logPath != "" || dsn != "" {
		var d *dbconn.DSN
		if dsn != "" {
			if d, err = dbconn.Parse(dsn); err != nil {
				return usagef("plan sync: --dsn: %v", err)
			}
		}
		if software, unauth, err = sf.measure(ctx, env, d, dur, &in.Parts); err != nil {
			return err
		}
		target = "measured"
		if sf.to != "" {
			target = sf.to
		}
	}
	if err := applySyncAssume(&in.Parts, assumed); err != nil {
		return err
	}
	syncPlan, err := advisor.PlanSync(in)
	if err != nil {
		return usagef("plan sync: %v", err)
	}
	rep := result.NewReport("plan sync", target, tool(), env.Now())
	rep.Agent, rep.Unauthenticated = software, unauth
	rep.SyncPlan = &syncPlan
	return finish(ctx, withHTML(output(env, sf.json), htmlPath), rep, nil)
}

// measure runs every part the flags make possible, saying on stderr which
// step of how many runs. A step that fails is named and leaves its part
// unknown; the plan then says so rather than guessing.
func (sf syncFlags) measure(ctx context.Context, env Env, d *dbconn.DSN, dur time.Duration, ps *result.SyncParts) (string, bool, error) {
	var steps []planStep
	if d != nil {
		steps = append(steps, planStep{"a commit today on " + d.Redacted + " (one session, one 1000 B row a commit, one after another)",
			func(ctx context.Context) error { return commitToday(ctx, d, dur, ps) }})
	}
	if sf.logPath != "" {
		size, err := metric.ParseSize(sf.diskSize)
		if err != nil || size < disk.MinSize {
			return "", false, usagef("--disk-size %q: %s", sf.diskSize, errOr(err, "use at least 1M"))
		}
		steps = append(steps, planStep{"the local log flush, 8 KiB write + fdatasync (" + sf.logPath + ")", func(ctx context.Context) error {
			res, err := localLogFlush(ctx, sf.logPath, size, dur)
			if f := logFlushFigure(res, "measured"); f != nil {
				ps.LocalFlush = f
			}
			return err
		}})
	}
	var sess *client.Session
	if sf.to != "" {
		opts, err := sf.agent.options(env, "--to", sf.to)
		if err != nil {
			return "", false, err
		}
		if sess, err = connect(ctx, opts); err != nil {
			return "", false, err
		}
		defer sess.Close()
		steps = append(steps, planStep{"round trips to the agent", func(ctx context.Context) error {
			res, err := rr.Run(ctx, sess, rr.Config{Request: 64, Response: 64, Duration: min(dur, 3*time.Second), Interval: time.Second, Queries: 1}, func(result.Interval) {})
			if res != nil && res.RoundTrips > 0 {
				ps.RTT = &result.Figure{Seconds: res.Latency.P50, Source: "measured", What: fmt.Sprintf("net rr p50 of %s", metric.Plural(res.RoundTrips, "round trip"))}
			}
			return err
		}})
		steps = append(steps, sf.commitSteps(sess, dur, ps)...)
	}
	software, unauth := "", false
	if sess != nil {
		software, unauth = sess.Software, !sess.Authenticated
	}
	for i, st := range steps {
		fmt.Fprintf(env.Stderr, "narrows plan sync: step %d of %d: %s\n", i+1, len(steps), st.what)
		if err := st.run(ctx); err != nil {
			if ctx.Err() != nil {
				return software, unauth, errInterrupted
			}
			switch {
			case errext.IsUser(err): // refused by the agent, or a mistake of ours to fix
				return software, unauth, fmt.Errorf("plan sync: %s: %w", st.what, err)
			case errors.Is(err, client.ErrMisbehaved):
				// Nothing it said is a figure to plan on.
				return software, unauth, fmt.Errorf("plan sync: %s: %w", st.what, err)
			}
			fmt.Fprintf(env.Stderr, "narrows plan sync: %s was not measured: %v\n", st.what, err)
		}
	}
	return software, unauth, nil
}

// commitToday times a commit today on d: one session commits one 1000 B
// row after another for dur, not paced. A commit after an idle pays for
// waking what slept (the backend, the client, on a VM a halted vCPU);
// with a synchronous replica
// each commit's own work follows the last one at once, the wait being
// the acknowledgement's (which net commit times with its own wake-ups).
// Paced at 50 a second, as before issue 25, every commit today paid for
// 20 ms of sleep, and the plan read 1.294 and 1.723 of pgbench's
// synchronous commit across 1 ms (two runs of TestSyncCommit: 2.788
// against 2.15 ms, 4.255 against 2.47 ms); back to back the same runs'
// figures give 0.924 and 1.070, and across 10 ms 0.960 and 0.912 (paced:
// 1.026, 0.975). Timed after an idle as long as the acknowledgement (the
// model tried between) gave 0.934 and 1.247 across 1 ms: on a loaded
// machine a 1.8 ms idle already cost most of the paced figure. Back to
// back writes more log while it measures (1-2 MB/s of rows on the
// testbed, a commit every 0.5-0.9 ms, for --stage-duration): one
// session, into a scratch table db load truncates as it grows.
func commitToday(ctx context.Context, d *dbconn.DSN, dur time.Duration, ps *result.SyncParts) error {
	cfg := dbload.Config{Rate: 1e9, Duration: dur, Interval: time.Second, Table: dbload.DefaultTable, RowBytes: 1000,
		Sessions: 1, RowsPerCommit: 1, Timeout: 10 * time.Second}
	res, err := dbload.Run(ctx, d, cfg, func(result.Interval) {})
	if res != nil && res.CommitLatency != nil && res.Commits > 0 {
		ps.CommitNow = &result.Figure{Seconds: res.CommitLatency.P50, Source: "measured",
			What: fmt.Sprintf("p50 of %s one after another, one 1000 B row each, %s", metric.Plural(res.Commits, "commit"), d.Redacted)}
	}
	return dbErr(err, d)
}

// logFlushPattern is the local flush the plan uses: one 8 KiB write made
// durable with fdatasync, one at a time, as PostgreSQL flushes its WAL on
// Linux (and `narrows disk --profile log` measures among its patterns).
func logFlushPattern() disk.Pattern {
	return disk.Pattern{Profile: result.ProfileLog, RW: disk.Write, Block: 8 << 10, QD: 1, Threads: 1, Sync: result.SyncFdatasync}
}

// localLogFlush measures logFlushPattern on dir here.
func localLogFlush(ctx context.Context, dir string, size int64, dur time.Duration) (*result.Disk, error) {
	cfg := disk.Config{Dir: dir, Size: size, Duration: dur, Interval: time.Second, Engine: disk.EngineAuto, Seed: 1,
		Profiles: []string{result.ProfileLog}, Patterns: []disk.Pattern{logFlushPattern()}}
	return disk.Measure(ctx, cfg, disk.Hooks{}, func(result.Interval) {})
}

// logFlushFigure is a disk run's 8 KiB write + fdatasync, one at a time,
// as a figure: the flush PostgreSQL's commit waits for on Linux (one WAL
// page, wal_sync_method = fdatasync), the one size a plan takes as a
// small commit's flush. A run without it gives none: another size is
// another flush, and the plan says what it lacks rather than stand one
// for the other.
func logFlushFigure(d *result.Disk, source string) *result.Figure {
	if d == nil {
		return nil
	}
	for _, p := range d.Patterns {
		if p.Stopped != "" || p.IOs == 0 || p.RW != "write" || p.QueueDepth != 1 || p.Threads != 1 || p.Sync != result.SyncFdatasync || p.BlockBytes != 8<<10 {
			continue
		}
		return &result.Figure{Seconds: p.P50, Source: source, What: fmt.Sprintf("%s p50 (PostgreSQL's WAL page), %s", p.Name, d.Path)}
	}
	return nil
}

// syncPart is the figure of a part plan sync takes by hand as a time
// (throughput, the one rate, is set apart).
func syncPart(ps *result.SyncParts, name string) **result.Figure {
	switch name {
	case "commit":
		return &ps.CommitNow
	case "local-flush":
		return &ps.LocalFlush
	case "rtt":
		return &ps.RTT
	case "remote-flush":
		return &ps.RemoteFlush
	case "remote-write":
		return &ps.RemoteWrite
	case "ack-flush":
		return &ps.RemoteCommit
	}
	return &ps.RemoteReceipt // ack-write: ParseAssume let no other name through
}

// syncAssumeNames are the parts plan sync takes by hand.
var syncAssumeNames = []string{"commit", "local-flush", "rtt", "remote-flush", "remote-write", "ack-flush", "ack-write", "throughput"}

// applySyncAssume sets the parts --assume gives over what was measured.
func applySyncAssume(ps *result.SyncParts, as []plan.Assumption) error {
	for _, a := range as {
		if a.Name == "throughput" {
			bps, err := a.Rate()
			if err != nil {
				return usagef("%v", err)
			}
			ps.Throughput = &result.Rate{BytesPerSecond: bps, Source: "assumed"}
			continue
		}
		d, err := a.Duration(false)
		if err != nil {
			return usagef("%v", err)
		}
		*syncPart(ps, a.Name) = &result.Figure{Seconds: result.Seconds(d), Source: "assumed"}
	}
	return nil
}

// syncPartsFrom reads the parts from saved runs: every summary record in
// the file contributes what it measured, a later one overriding.
func syncPartsFrom(path string, ps *result.SyncParts) error {
	src := "measured (" + path + ")"
	found := false
	err := savedSummaries(path, func(r *result.Report) { found = syncPartsOf(r, src, ps) || found })
	if err != nil {
		return err
	}
	if !found {
		return usagef("--from %s: nothing a sync plan uses in it: save `narrows net commit`, `net rr`, `disk --profile log`, `db load` or `plan sync` with --json", path)
	}
	if ps.RemoteFlush == nil && ps.RemoteFlushCheck != nil {
		ps.RemoteFlush, ps.RemoteFlushCheck = ps.RemoteFlushCheck, nil
	}
	return nil
}

// syncPartsOf takes from one saved summary what a sync plan uses, and
// says whether there was any.
func syncPartsOf(r *result.Report, src string, ps *result.SyncParts) bool {
	found := false
	set := func(into **result.Figure, s result.Seconds, what string) {
		if s > 0 {
			*into = &result.Figure{Seconds: s, Source: src, What: what}
			found = true
		}
	}
	if p := r.SyncPlan; p != nil {
		for _, x := range []struct{ into, from **result.Figure }{{&ps.CommitNow, &p.Parts.CommitNow}, {&ps.LocalFlush, &p.Parts.LocalFlush},
			{&ps.RTT, &p.Parts.RTT}, {&ps.RemoteFlush, &p.Parts.RemoteFlush}, {&ps.RemoteWrite, &p.Parts.RemoteWrite},
			{&ps.RemoteCommit, &p.Parts.RemoteCommit}, {&ps.RemoteReceipt, &p.Parts.RemoteReceipt}, {&ps.RemoteFlushCheck, &p.Parts.RemoteFlushCheck}} {
			if f := *x.from; f != nil {
				set(x.into, f.Seconds, f.What)
			}
		}
		if t := p.Parts.Throughput; t != nil {
			ps.Throughput = &result.Rate{BytesPerSecond: t.BytesPerSecond, Source: src, What: t.What}
			found = true
		}
	}
	if x := r.RR; x != nil && x.RoundTrips > 0 {
		set(&ps.RTT, x.Latency.P50, fmt.Sprintf("net rr p50 of %s", metric.Plural(x.RoundTrips, "round trip")))
	}
	if x := r.Disk; x != nil {
		if f := logFlushFigure(x, src); f != nil {
			if x.Agent == "" {
				ps.LocalFlush, found = f, true
			} else {
				// The replica's flush measured apart from net commit's:
				// held against it (advisor.FlushDisagreement), and standing
				// for it where net commit did not run (syncPartsFrom).
				ps.RemoteFlushCheck, found = f, true
				f.What += " on " + x.Agent
			}
		}
	}
	if x := r.DBLoad; x != nil && x.CommitLatency != nil && x.Commits > 0 {
		set(&ps.CommitNow, x.CommitLatency.P50, fmt.Sprintf("db load p50 of %s of %s", metric.Plural(x.Commits, "commit"), result.CommitRows(x.RowsPerCommit, x.Config.RowBytes)))
	}
	if x := r.Commit; x != nil && x.Commits > 0 {
		found = commitParts(x, src, ps) || found
	}
	return found
}

// commitParts takes what a saved `net commit` run measured: with one
// block in flight, the acknowledgement whole and the agent's write and
// flush; with more, acknowledged after a flush, the log throughput.
func commitParts(x *result.Commit, src string, ps *result.SyncParts) bool {
	c := x.Config
	what := fmt.Sprintf("net commit --ack %s, %s blocks", c.Ack, metric.FormatBytes(c.BlockBytes))
	p50 := func(l *result.Latencies) result.Seconds {
		if l == nil {
			return 0
		}
		return l.P50
	}
	switch {
	case c.InFlight > 1 && c.Ack == result.AckFlush && x.BytesPerSecond > 0:
		ps.Throughput = &result.Rate{BytesPerSecond: x.BytesPerSecond, Source: src, What: fmt.Sprintf("%s, %d in flight", what, c.InFlight)}
	case c.InFlight > 1:
		return false
	case c.Ack == result.AckFlush:
		ps.RemoteCommit = &result.Figure{Seconds: x.Latency.P50, Source: src, What: what + " p50"}
		if w, f := p50(x.AgentWrite), p50(x.AgentFlush); w > 0 && f > 0 && x.Flushes >= advisor.MinFlushes {
			ps.RemoteFlush = &result.Figure{Seconds: w + f, Source: src, What: fmt.Sprintf("the agent's write + %s p50 of %s, %s", c.Flush, metric.FormatCount(x.Flushes)+" flushes", what)}
		}
		// The write timed beside the acknowledgement after a write is
		// the one its receipt includes (a median of a sum is at least the
		// median of its part; of two runs, not): this one only stands in
		// when there is none.
		if w := p50(x.AgentWrite); w > 0 && ps.RemoteReceipt == nil {
			ps.RemoteWrite = &result.Figure{Seconds: w, Source: src, What: "the agent's write p50, " + what}
		}
	case c.Ack == result.AckWrite:
		ps.RemoteReceipt = &result.Figure{Seconds: x.Latency.P50, Source: src, What: what + " p50"}
		if w := p50(x.AgentWrite); w > 0 {
			ps.RemoteWrite = &result.Figure{Seconds: w, Source: src, What: "the agent's write p50, " + what}
		}
	default:
		ps.RTT = &result.Figure{Seconds: x.Latency.P50, Source: src, What: what + " p50"}
	}
	return true
}

// commitSteps measure the replica's side through the agent with `net
// commit`: the acknowledgement after a write and after a flush, one
// block at a time (--block, a small commit's log), then the throughput of 64 KiB blocks with --in-flight.
// An agent that writes no files (no --disk-path) measures none of them:
// the plan then names the replica's flush as not known.
func (sf syncFlags) commitSteps(sess *client.Session, dur time.Duration, ps *result.SyncParts) []planStep {
	where := sf.remotePath
	if where == "" && len(sess.Limits.DiskPaths) > 0 {
		where = sess.Limits.DiskPaths[0]
	}
	step := func(what string, cfg commitprobe.Config) planStep {
		return planStep{what + " (" + where + " on the agent)", func(ctx context.Context) error {
			if !sess.Runs(wire.KindCommit) {
				return fmt.Errorf("the agent (narrows %s) does not run net commit: upgrade it", sess.Software)
			}
			if len(sess.Limits.DiskPaths) == 0 {
				return errors.New("the agent writes no files: start it with --disk-path DIR on the replica's log disk")
			}
			cfg.Path, cfg.Duration, cfg.Interval = sf.remotePath, dur, time.Second
			res, err := commitprobe.Run(ctx, sess, cfg, func(result.Interval) {})
			if res != nil && res.Commits > 0 {
				commitParts(res, "measured on the agent", ps)
			}
			return err
		}}
	}
	return []planStep{
		step(fmt.Sprintf("log blocks acknowledged once written, %s, one at a time", metric.FormatBytes(sf.commitBytes)),
			commitprobe.Config{Block: sf.commitBytes, InFlight: 1, Ack: result.AckWrite}),
		step(fmt.Sprintf("log blocks acknowledged once flushed (fdatasync), %s, one at a time", metric.FormatBytes(sf.commitBytes)),
			commitprobe.Config{Block: sf.commitBytes, InFlight: 1, Ack: result.AckFlush, Flush: result.FlushFdatasync}),
		step(fmt.Sprintf("the synchronous log throughput, 64 KiB blocks, %d in flight", sf.inFlight),
			commitprobe.Config{Block: 64 << 10, InFlight: sf.inFlight, Ack: result.AckFlush, Flush: result.FlushFdatasync}),
	}
}
