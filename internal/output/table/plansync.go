package table

import (
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// syncPlanSummary writes a synchronous-replica plan: the parts it was
// composed from, one row per engine, the operation, the model's notes.
func syncPlanSummary(b *strings.Builder, p *result.SyncPlan) {
	ps := p.Parts
	b.WriteString("Parts:\n")
	fig := func(name string, f *result.Figure) {
		if f == nil {
			fmt.Fprintf(b, "  %-28s %10s\n", name, "not known")
			return
		}
		fmt.Fprintf(b, "  %-28s %10s  %s\n", name, metric.FormatDuration(f.Seconds.D()), provenance(f.Source, f.What))
	}
	fig("commit today", ps.CommitNow)
	fig("local log flush", ps.LocalFlush)
	fig("round trip to the replica", ps.RTT)
	fig("replica's write", ps.RemoteWrite)
	fig("replica's write + flush", ps.RemoteFlush)
	if ps.RemoteReceipt != nil {
		fig("acknowledged after write", ps.RemoteReceipt)
	}
	if ps.RemoteCommit != nil {
		fig("acknowledged after flush", ps.RemoteCommit)
	}
	if ps.Throughput != nil {
		fmt.Fprintf(b, "  %-28s %10s  %s\n", "log throughput, synchronous", metric.FormatByteRate(ps.Throughput.BytesPerSecond), provenance(ps.Throughput.Source, ps.Throughput.What))
	}

	d := func(s float64) string {
		if s <= 0 {
			return "-"
		}
		return metric.FormatDuration(time.Duration(s * float64(time.Second)))
	}
	perSecond := func(r float64) string {
		if r <= 0 {
			return "-"
		}
		return metric.FormatCount(int64(r + 0.5))
	}
	const row = "%-26s %10s %11s %10s %14s %8s\n"
	fmt.Fprintf(b, "\n"+row, "synchronous replica", "adds", "commit now", "then", "commits/s now", "then")
	for _, e := range p.Engines {
		if len(e.Missing) > 0 {
			fmt.Fprintf(b, "%-26s not predicted: %s not known\n", words.SyncEngine(e.Engine), strings.Join(e.Missing, ", "))
			continue
		}
		fmt.Fprintf(b, row, words.SyncEngine(e.Engine), d(e.AddedSeconds), d(e.CommitNowSeconds), d(e.PredictedCommitLatencySeconds),
			perSecond(e.CommitsPerSecondNow), perSecond(e.PredictedCommitsPerSecond))
	}
	b.WriteString("(one session; a commit's latency at the median)\n")
	if op := p.Operation; op != nil {
		fmt.Fprintf(b, "\nAn operation writing %s of log, %s alone:\n", metric.FormatDecimalBytes(op.LogBytes), metric.FormatSeconds(op.AloneSeconds))
		if op.AsyncBehindBytes > 0 {
			fmt.Fprintf(b, "  %-24s %s; the replica has all its log %s later (%s not yet shipped when it returns)\n", "asynchronous replica",
				metric.FormatSeconds(op.AsyncSeconds), metric.FormatSeconds(op.AsyncBehindSeconds), metric.FormatDecimalBytes(op.AsyncBehindBytes))
		} else {
			fmt.Fprintf(b, "  %-24s %s; the replica keeps up (its log crosses as fast as it is written)\n", "asynchronous replica", metric.FormatSeconds(op.AsyncSeconds))
		}
		fmt.Fprintf(b, "  %-24s %s, at worst %s: limited by %s (its log crosses in %s)\n", "synchronous replica",
			metric.FormatSeconds(op.SyncSeconds), metric.FormatSeconds(op.SyncAtWorstSeconds), op.LimitedBy, metric.FormatSeconds(op.ShipSeconds))
	}
	for i, c := range p.Engines {
		if i == 0 {
			b.WriteString("\nHow each commit is composed:\n")
		}
		fmt.Fprintf(b, "  %s, %s:\n    %s\n", words.SyncEngine(c.Engine), c.Setting, c.Formula)
	}
	if len(p.Notes) > 0 {
		b.WriteString("\nThe model:\n")
		for _, n := range p.Notes {
			var w strings.Builder
			wrap(&w, n, "    ", 96)
			b.WriteString("  - " + strings.TrimPrefix(w.String(), "    "))
		}
	}
}
