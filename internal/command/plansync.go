package command

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	commitprobe "github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/probe/dbload"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// PlanSync is `narrows plan sync`: what a synchronous replica costs each
// commit and a maintenance operation, by engine. Its parts come from
// saved runs (From), measurements (DSN, LogPath, Measure) or by hand
// (Assume), the later overriding the earlier.
type PlanSync struct {
	Engines []string // result.Sync*, in the order planned
	// OpLog is a maintenance operation's log (an index rebuild's WAL) and
	// OpTime its time without a replica: its time with one is planned
	// too. Both or neither.
	OpLog  int64
	OpTime time.Duration

	From   plan.Saved        // saved runs, each summary contributing what it measured, a later one overriding
	Assume []plan.Assumption // parts given by hand (plan.SyncAssumeNames)
	Stage  time.Duration     // how long each part is measured
	// DSN is the primary a commit today is measured on (one session
	// commits small rows into a scratch table it creates and drops); nil:
	// not measured.
	DSN *dbconn.DSN
	// LogPath is the directory of the primary's log disk here, where the
	// local log flush is measured on a test file of DiskSize bytes; "":
	// not measured.
	LogPath  string
	DiskSize int64
	Measure  *SyncMeasure // the replica's side through the agent; nil: not measured
}

// SyncMeasure is how plan sync measures the replica's side, through the
// agent (`narrows serve --disk-path DIR` on the replica's host) with net
// rr and net commit.
type SyncMeasure struct {
	Agent client.Options
	// To is the agent as the person named it, the report's target;
	// Agent.Addr when empty.
	To string
	// RemotePath is the directory on the agent to flush log blocks in;
	// "": the agent's first --disk-path.
	RemotePath string
	Block      int64 // the log one small commit ships, sent as one block (512 B to 1 MiB)
	InFlight   int   // 64 KiB log blocks in flight for the bulk throughput (2 to 1024)
}

// DefaultPlanSync is plan sync with its flags' defaults: every engine, 5 s
// a part, a 64 MiB test file for the local flush. It has no parts: give
// From, Assume or something to measure.
func DefaultPlanSync() PlanSync {
	return PlanSync{Engines: []string{result.SyncPostgres, result.SyncSQLServer, result.SyncMySQL}, Stage: 5 * time.Second, DiskSize: 64 << 20}
}

// DefaultSyncMeasure is the replica's side measured through the agent at
// agent with the flags' defaults: 1 KiB blocks, 32 in flight.
func DefaultSyncMeasure(agent client.Options) SyncMeasure {
	return SyncMeasure{Agent: agent, Block: 1 << 10, InFlight: 32}
}

// Run reads, measures and plans.
func (c PlanSync) Run(ctx context.Context, env Env) (*result.Report, error) {
	started := env.now() // the run starts here, before anything is measured
	in := advisor.SyncInput{Engines: slices.Clone(c.Engines), OpLog: c.OpLog, OpTime: c.OpTime}
	target := "assumed"
	if c.From.Given() {
		var err error
		if in.Parts, err = SyncPartsFrom(c.From); err != nil {
			return nil, err
		}
		target = c.From.Name
	}
	var software string
	var unauth bool
	if c.DSN != nil || c.LogPath != "" || c.Measure != nil {
		var err error
		if software, unauth, err = c.measure(ctx, env.note, &in.Parts); err != nil {
			return nil, err
		}
		target = "measured"
		if c.Measure != nil {
			target = agentName(c.Measure.To, c.Measure.Agent)
		}
	}
	if err := plan.ApplySync(&in.Parts, c.Assume); err != nil {
		return nil, err
	}
	p, err := advisor.PlanSync(in)
	if err != nil {
		return nil, errext.Userf(nil, "plan sync: %v", err)
	}
	rep := result.NewReport("plan sync", target, env.Tool, started)
	rep.Agent, rep.Unauthenticated = software, unauth
	rep.SyncPlan = &p
	return Finish(ctx, env.Tool, rep, nil)
}

// measure runs every part the Config makes possible, giving note which
// step of how many runs. A step that fails is named and leaves its part
// unknown; the plan then says so rather than guessing.
func (c PlanSync) measure(ctx context.Context, note func(string), ps *result.SyncParts) (string, bool, error) {
	dur := c.Stage
	var steps []planStep
	if d := c.DSN; d != nil {
		steps = append(steps, planStep{"a commit today on " + d.Redacted + " (one session, one 1000 B row a commit, one after another)",
			func(ctx context.Context) error { return commitToday(ctx, d, dur, ps) }})
	}
	if c.LogPath != "" {
		steps = append(steps, planStep{"the local log flush, 8 KiB write + fdatasync (" + c.LogPath + ")", func(ctx context.Context) error {
			res, err := localLogFlush(ctx, c.LogPath, c.DiskSize, dur)
			if f := logFlushFigure(res, "measured"); f != nil {
				ps.LocalFlush = f
			}
			return err
		}})
	}
	var sess *client.Session
	if m := c.Measure; m != nil {
		var err error
		if sess, err = Connect(ctx, m.Agent); err != nil {
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
		steps = append(steps, m.commitSteps(sess, dur, ps)...)
	}
	software, unauth := "", false
	if sess != nil {
		software, unauth = sess.Software, !sess.Authenticated
	}
	for i, st := range steps {
		note(fmt.Sprintf("narrows plan sync: step %d of %d: %s", i+1, len(steps), st.what))
		if err := st.run(ctx); err != nil {
			if ctx.Err() != nil {
				return software, unauth, ErrInterrupted
			}
			switch {
			case errext.IsUser(err): // refused by the agent, or a mistake of ours to fix
				return software, unauth, fmt.Errorf("plan sync: %s: %w", st.what, err)
			case errors.Is(err, client.ErrMisbehaved):
				// Nothing it said is a figure to plan on.
				return software, unauth, fmt.Errorf("plan sync: %s: %w", st.what, err)
			}
			note(fmt.Sprintf("narrows plan sync: %s was not measured: %v", st.what, err))
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

// SyncPartsFrom reads the parts from saved runs: every summary record
// contributes what it measured, a later one overriding. A run with
// nothing a sync plan uses is a usage error.
func SyncPartsFrom(saved plan.Saved) (result.SyncParts, error) {
	var ps result.SyncParts
	src := saved.Measured()
	found := false
	for _, r := range saved.Reports {
		found = syncPartsOf(r, src, &ps) || found
	}
	if !found {
		return ps, errext.Userf(nil, "--from %s: nothing a sync plan uses in it: save `narrows net commit`, `net rr`, `disk --profile log`, `db load` or `plan sync` with --json", saved.Name)
	}
	if ps.RemoteFlush == nil && ps.RemoteFlushCheck != nil {
		ps.RemoteFlush, ps.RemoteFlushCheck = ps.RemoteFlushCheck, nil
	}
	return ps, nil
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
				// for it where net commit did not run (SyncPartsFrom).
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

// commitParts takes what a `net commit` run measured: with one block in
// flight, the acknowledgement whole and the agent's write and flush;
// with more, acknowledged after a flush, the log throughput.
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
// block at a time (Block, a small commit's log), then the throughput of
// 64 KiB blocks with InFlight. An agent that writes no files (no
// --disk-path) measures none of them: the plan then names the replica's
// flush as not known.
func (m SyncMeasure) commitSteps(sess *client.Session, dur time.Duration, ps *result.SyncParts) []planStep {
	where := m.RemotePath
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
			cfg.Path, cfg.Duration, cfg.Interval = m.RemotePath, dur, time.Second
			res, err := commitprobe.Run(ctx, sess, cfg, func(result.Interval) {})
			if res != nil && res.Commits > 0 {
				commitParts(res, "measured on the agent", ps)
			}
			return err
		}}
	}
	return []planStep{
		step(fmt.Sprintf("log blocks acknowledged once written, %s, one at a time", metric.FormatBytes(m.Block)),
			commitprobe.Config{Block: m.Block, InFlight: 1, Ack: result.AckWrite}),
		step(fmt.Sprintf("log blocks acknowledged once flushed (fdatasync), %s, one at a time", metric.FormatBytes(m.Block)),
			commitprobe.Config{Block: m.Block, InFlight: 1, Ack: result.AckFlush, Flush: result.FlushFdatasync}),
		step(fmt.Sprintf("the synchronous log throughput, 64 KiB blocks, %d in flight", m.InFlight),
			commitprobe.Config{Block: 64 << 10, InFlight: m.InFlight, Ack: result.AckFlush, Flush: result.FlushFdatasync}),
	}
}
