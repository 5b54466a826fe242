package advisor

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// SyncInput is what a synchronous-replica plan is asked: the parts,
// measured or given, the engines, and an operation to time.
type SyncInput struct {
	Parts result.SyncParts
	// Engines are result.Sync*; none is all three.
	Engines []string
	// OpLog and OpTime are a maintenance operation's log and its time
	// without a replica (both or neither).
	OpLog  int64
	OpTime time.Duration
}

// A synchronous replica makes each commit wait, after or while the
// primary makes its log durable, for the replica's host to receive (and
// make durable) the commit's log and say so. How the waits add up is the
// engine's:
//
//   - PostgreSQL (synchronous_commit = on) flushes its WAL locally, and only
//     then does the walsender send it; the backend waits for the standby's
//     flush: local flush + round trip + the standby's write and flush.
//     remote_write waits for the standby's write alone.
//   - SQL Server (SYNCHRONOUS_COMMIT availability mode) sends the log block
//     while it hardens it locally: max(local flush, round trip + the
//     secondary's harden).
//   - MySQL semi-synchronous replication (AFTER_SYNC) syncs the binary log,
//     then waits for the replica to acknowledge the event once written to
//     its relay log (not flushed: sync_relay_log is 10,000 by default):
//     local flush + round trip + the replica's write.
//
// Each is added to the commit as a session waits for it today, which
// already holds the local flush: PostgreSQL and MySQL add the remote part
// whole, SQL Server only what of it outlasts the local flush.

// PlanSync composes the plan. It fails only when no part is known.
func PlanSync(in SyncInput) (result.SyncPlan, error) {
	p := result.SyncPlan{Parts: in.Parts, Engines: []result.SyncEngine{}, Notes: []string{}}
	ps := in.Parts
	if ps.CommitNow == nil && ps.LocalFlush == nil && ps.RTT == nil && ps.RemoteFlush == nil && ps.RemoteWrite == nil &&
		ps.RemoteCommit == nil && ps.RemoteReceipt == nil && ps.Throughput == nil {
		return p, errors.New("no part of a commit was measured or given")
	}
	engines := in.Engines
	if len(engines) == 0 {
		engines = []string{result.SyncPostgres, result.SyncSQLServer, result.SyncMySQL}
	}
	remote, remoteMissing, remoteWords := remoteAck(ps.RemoteCommit, ps.RTT, ps.RemoteFlush, "flush")
	receipt, receiptMissing, receiptWords := remoteAck(ps.RemoteReceipt, ps.RTT, ps.RemoteWrite, "write")
	if why := FlushDisagreement(ps.RemoteFlush, ps.RemoteFlushCheck); why != "" {
		// Each engine that waits for the replica's flush would rest on
		// whichever of the two is wrong: neither is concluded from.
		remote, remoteMissing = -1, []string{why}
	}
	for _, e := range engines {
		var x result.SyncEngine
		switch e {
		case result.SyncPostgres:
			x = addAfter(ps, "postgres", "synchronous_commit = on, the standby in synchronous_standby_names",
				"the commit today, then "+remoteWords, remote, remoteMissing)
			p.Engines = append(p.Engines, x)
			x = addAfter(ps, "postgres_remote_write", "synchronous_commit = remote_write",
				"the commit today, then "+receiptWords, receipt, receiptMissing)
		case result.SyncMySQL:
			x = addAfter(ps, "mysql", "semi-synchronous replication, rpl_semi_sync_source_wait_point = AFTER_SYNC",
				"the commit today (its binary log synced), then "+receiptWords, receipt, receiptMissing)
		case result.SyncSQLServer:
			x = result.SyncEngine{Engine: "sqlserver", Setting: "availability mode SYNCHRONOUS_COMMIT",
				Formula: "the commit today, with its local log flush replaced by the longer of that flush and " + remoteWords}
			switch {
			case remote < 0 || ps.LocalFlush == nil:
				x.Missing = remoteMissing
				if ps.LocalFlush == nil {
					x.Missing = append(x.Missing, "the local log flush (--log-path)")
				}
			default:
				local := ps.LocalFlush.Seconds.D().Seconds()
				x.AddedSeconds = math.Max(0, remote-local)
				completeCommit(ps, &x)
			}
		default:
			return p, fmt.Errorf("unknown engine %q: use postgres, sqlserver or mysql", e)
		}
		p.Engines = append(p.Engines, x)
	}
	if ps.CommitNow == nil {
		if ps.LocalFlush != nil {
			p.Notes = append(p.Notes, "The commit today was not measured: the local log flush stands for it, so the statement's own round trip and execution are left out (measure it with --dsn, or give it: --assume commit=0.9ms).")
		} else {
			p.Notes = append(p.Notes, "Neither the commit today nor the local log flush is known: only what the replica adds is shown (--dsn measures the commit, --log-path the flush).")
		}
	}
	p.Notes = append(p.Notes,
		"One session's commits, each waited for in turn; many sessions share a flush (group commit), so a busy primary commits more per second than one session, each commit still waiting as long.",
		"A session that commits seldom wakes from a longer sleep for each commit and waits longer than this: on the testbed across 1 ms, 3.3 ms a commit at 40 commits a second against 2.2 ms one after another.",
		"Not counted: the few process wake-ups a synchronous commit adds on each side (the walsender, the walreceiver and the backend in PostgreSQL, about 0.1 ms each on the testbed's VM) and replay on the replica, which a synchronous commit does not wait for (PostgreSQL's remote_apply does).")
	if in.OpLog > 0 || in.OpTime > 0 {
		op, note, err := syncOperation(in.OpLog, in.OpTime, ps.Throughput)
		if err != nil {
			return p, err
		}
		p.Operation = op
		if note != "" {
			p.Notes = append(p.Notes, note)
		}
	}
	return p, nil
}

// Two measures of the replica's log flush in one run: flush, net
// commit's, each made after a round trip's idle, as a synchronous commit
// makes it; and check, the disk test's, back to back. After an idle the
// flush also pays for waking what slept (the device's worker, a halted
// vCPU): on this project's VMs 456 µs against 162 µs back to back on the
// same disk, 716 against 235 µs on a loop device. That is the synchronous
// commit's own cost, and the plan takes the flush made in context. They
// disagree when that one reads FlushDisagreeRatio times faster than the
// back-to-back one (no idle makes a flush faster: one of them is wrong),
// or FlushOutlierRatio times slower (no wake-up costs that much: the
// field's 12.2 ms against 125 µs, 98 times); either way by more than
// FlushDisagreeBy, below which the difference moves a synchronous commit
// by less than a LAN's round trip.
const (
	FlushDisagreeRatio = 2.0
	FlushOutlierRatio  = 10.0
	FlushDisagreeBy    = 250 * time.Microsecond
)

// FlushDisagreement says, in words, how two measures of the replica's
// log flush disagree, or "" when they agree or one is unknown.
func FlushDisagreement(flush, check *result.Figure) string {
	if flush == nil || check == nil {
		return ""
	}
	a, b := flush.Seconds.D(), check.Seconds.D()
	if a <= 0 || b <= 0 || max(a, b)-min(a, b) < FlushDisagreeBy {
		return ""
	}
	if float64(b) < FlushDisagreeRatio*float64(a) && float64(a) < FlushOutlierRatio*float64(b) {
		return ""
	}
	return fmt.Sprintf("the replica's log flush: two measures of it in this run disagree, %s (%s) against %s (%s)",
		metric.FormatDuration(a), figureWords(flush), metric.FormatDuration(b), figureWords(check))
}

// withdraws are findings that take back others of the same run: a
// verdict the other rests on was found not to hold (doctor shows the one,
// not the other).
var withdraws = map[string][]string{
	// commit.split concludes from net commit's flush, which the disk test
	// of the same filesystem contradicted.
	"plan.sync_flush_disagree": {"commit.split"},
}

// Withdrawn says which codes the findings take back.
func Withdrawn(fs []result.Finding) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		for _, c := range withdraws[f.Code] {
			out[c] = true
		}
	}
	return out
}

// figureWords is where a figure came from, in a phrase.
func figureWords(f *result.Figure) string {
	if f.What != "" {
		return f.What
	}
	return f.Source
}

// remoteAck is what the replica's acknowledgement costs a commit, in
// seconds (-1 when unknown): a whole acknowledgement measured at once, or
// a round trip plus the replica's part. It says which parts were missing,
// and how it was composed.
func remoteAck(whole, rtt, part *result.Figure, what string) (float64, []string, string) {
	switch {
	case whole != nil:
		return whole.Seconds.D().Seconds(), nil, fmt.Sprintf("the replica's acknowledgement after its %s, measured whole (a log block sent, %s on the replica's host and acknowledged)", what, map[string]string{"flush": "written, flushed", "write": "written"}[what])
	case rtt != nil && part != nil:
		return rtt.Seconds.D().Seconds() + part.Seconds.D().Seconds(), nil, "a round trip and the replica's " + what
	}
	var missing []string
	if rtt == nil {
		missing = append(missing, "the round trip to the replica (--to)")
	}
	if part == nil {
		missing = append(missing, "the replica's "+what+" (--to, with a --remote-path inside the agent's --disk-path)")
	}
	return -1, missing, "a round trip and the replica's " + what
}

// addAfter is an engine whose replica's wait follows the local flush.
func addAfter(ps result.SyncParts, engine, setting, formula string, remote float64, missing []string) result.SyncEngine {
	x := result.SyncEngine{Engine: engine, Setting: setting, Formula: formula}
	if remote < 0 {
		x.Missing = missing
		return x
	}
	x.AddedSeconds = remote
	completeCommit(ps, &x)
	return x
}

// completeCommit adds the commit today (or the local flush standing for
// it) to what the replica adds.
func completeCommit(ps result.SyncParts, x *result.SyncEngine) {
	now := 0.0
	switch {
	case ps.CommitNow != nil:
		now = ps.CommitNow.Seconds.D().Seconds()
	case ps.LocalFlush != nil:
		now = ps.LocalFlush.Seconds.D().Seconds()
	}
	x.CommitNowSeconds = now
	x.PredictedCommitLatencySeconds = now + x.AddedSeconds
	if now > 0 {
		x.CommitsPerSecondNow = 1 / now
	}
	if x.PredictedCommitLatencySeconds > 0 {
		x.PredictedCommitsPerSecond = 1 / x.PredictedCommitLatencySeconds
	}
}

// syncOperation times an operation that writes logBytes of log and takes
// alone without a replica. Its log crosses at the throughput: with an
// asynchronous replica the operation takes as long as alone and the
// replica is behind by whatever has not crossed when it returns; with a
// synchronous one it returns once its last commit's log is on the
// replica, so no sooner than the whole log has crossed — sooner than
// alone + crossing when it writes its log as it goes (a bulk load), up to
// that sum when it writes it all at its end (an index build after its
// sort).
func syncOperation(logBytes int64, alone time.Duration, tp *result.Rate) (*result.SyncOperation, string, error) {
	if logBytes <= 0 || alone <= 0 {
		return nil, "", errors.New("an operation needs both its log (--op-log) and its time alone (--op-time)")
	}
	if tp == nil || tp.BytesPerSecond <= 0 {
		return nil, "", errors.New("an operation's time needs the log's crossing rate: measure it (--to) or give it (--assume throughput=11MB/s)")
	}
	op := &result.SyncOperation{LogBytes: logBytes, AloneSeconds: alone.Seconds(), ThroughputBytesPerSecond: tp.BytesPerSecond}
	op.ShipSeconds = float64(logBytes) / tp.BytesPerSecond
	op.AsyncSeconds = op.AloneSeconds
	op.AsyncBehindSeconds = math.Max(0, op.ShipSeconds-op.AloneSeconds)
	op.AsyncBehindBytes = max(0, logBytes-int64(tp.BytesPerSecond*op.AloneSeconds))
	op.SyncSeconds = math.Max(op.AloneSeconds, op.ShipSeconds)
	op.SyncAtWorstSeconds = op.AloneSeconds + op.ShipSeconds
	op.LimitedBy = "the operation itself"
	if op.ShipSeconds > op.AloneSeconds {
		op.LimitedBy = "log shipping"
	}
	note := fmt.Sprintf("The operation's log crosses at %s (%s): %s of log in %s.", metric.FormatByteRate(tp.BytesPerSecond),
		provenanceWords(tp.Source, tp.What), metric.FormatDecimalBytes(logBytes), metric.FormatDuration(time.Duration(op.ShipSeconds*float64(time.Second))))
	return op, note, nil
}

// provenanceWords is where a figure came from, in a phrase.
func provenanceWords(source, what string) string {
	if what == "" {
		return source
	}
	return source + ", " + what
}

// syncPlan is the plan's findings.
func syncPlan(p *result.SyncPlan) []result.Finding {
	var out []result.Finding
	if why := FlushDisagreement(p.Parts.RemoteFlush, p.Parts.RemoteFlushCheck); why != "" {
		out = append(out, result.Finding{Code: "plan.sync_flush_disagree", Severity: "warning",
			Summary: "Cannot judge what the replica's storage adds to a synchronous commit: " + why + ".",
			Detail: "The same filesystem's flush, measured twice in one run, read two different things: one of the runs met other I/O there (a checkpoint, a backup, another test). " +
				"The commit with PostgreSQL (on) and SQL Server is not predicted from either. Run `narrows net commit --to AGENT --block 1K` and `narrows disk --to AGENT --profile log` again, back to back, while the replica's host is quiet.",
			Values: map[string]float64{"remote_flush_seconds": p.Parts.RemoteFlush.Seconds.D().Seconds(), "remote_flush_check_seconds": p.Parts.RemoteFlushCheck.Seconds.D().Seconds()}})
	}
	for _, e := range p.Engines {
		if len(e.Missing) > 0 || e.PredictedCommitLatencySeconds <= 0 {
			continue
		}
		d := func(s float64) string { return metric.FormatDuration(time.Duration(s * float64(time.Second))) }
		sum := fmt.Sprintf("%s: a synchronous replica adds %s to each commit, %s instead of %s; one session makes %s commits a second instead of %s.",
			words.SyncEngine(e.Engine), d(e.AddedSeconds), d(e.PredictedCommitLatencySeconds), d(e.CommitNowSeconds),
			perSecond(e.PredictedCommitsPerSecond), perSecond(e.CommitsPerSecondNow))
		if ps := p.Parts; ps.CommitNow == nil && ps.LocalFlush != nil && e.AddedSeconds > 0 {
			// The flush is not a commit: the statement's round trip and
			// execution come on top, so the commit is at least this.
			sum = fmt.Sprintf("%s: a synchronous replica adds %s to each commit; with the local log flush (%s) a commit takes at least %s, its statement's own time not measured (--dsn measures it); one session then makes at most %s commits a second.",
				words.SyncEngine(e.Engine), d(e.AddedSeconds), d(e.CommitNowSeconds), d(e.PredictedCommitLatencySeconds), perSecond(e.PredictedCommitsPerSecond))
		} else if e.AddedSeconds == 0 {
			sum = fmt.Sprintf("%s: a synchronous replica adds nothing a session waits for: the local log flush takes longer than the replica's acknowledgement; one session still makes %s commits a second.",
				words.SyncEngine(e.Engine), perSecond(e.PredictedCommitsPerSecond))
		} else if e.CommitNowSeconds == 0 {
			sum = fmt.Sprintf("%s: a synchronous replica adds %s to each commit; one session then makes at most %s commits a second.",
				words.SyncEngine(e.Engine), d(e.AddedSeconds), perSecond(e.PredictedCommitsPerSecond))
		}
		out = append(out, result.Finding{Code: "plan.sync_commit", Severity: "info", Summary: sum,
			Values: map[string]float64{"added_commit_latency_seconds": e.AddedSeconds, "predicted_commit_latency_seconds": e.PredictedCommitLatencySeconds,
				"predicted_commits_per_second": e.PredictedCommitsPerSecond}})
	}
	if op := p.Operation; op != nil {
		d := metric.FormatSeconds
		behind := "the replica keeping up"
		if op.AsyncBehindSeconds > 0 {
			behind = "the replica then " + d(op.AsyncBehindSeconds) + " behind"
		}
		out = append(out, result.Finding{Code: "plan.sync_operation", Severity: "info",
			Summary: fmt.Sprintf("An operation of %s of log that takes %s alone: with an asynchronous replica %s (%s); with a synchronous one %s to %s, limited by %s.",
				metric.FormatDecimalBytes(op.LogBytes), d(op.AloneSeconds), d(op.AsyncSeconds), behind, d(op.SyncSeconds), d(op.SyncAtWorstSeconds), op.LimitedBy),
			Values: map[string]float64{"predicted_sync_seconds": op.SyncSeconds, "predicted_sync_at_worst_seconds": op.SyncAtWorstSeconds,
				"async_behind_seconds": op.AsyncBehindSeconds}})
	}
	return out
}

// perSecond is a rate of commits in words: "87", "1,250".
func perSecond(r float64) string { return metric.FormatCount(int64(math.Round(r))) }
