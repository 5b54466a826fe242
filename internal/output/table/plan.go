package table

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// planSummary writes a backup plan: the stage rates it was composed from,
// then one row per size × compression with the stage that limits each.
func planSummary(b *strings.Builder, p *result.BackupPlan) {
	s := p.Stages
	b.WriteString("Stages:\n")
	rate := func(name string, r *result.Rate) {
		if r == nil {
			fmt.Fprintf(b, "  %-24s %12s\n", name, "not measured")
			return
		}
		fmt.Fprintf(b, "  %-24s %12s  %s\n", name, metric.FormatByteRate(r.BytesPerSecond), provenance(r.Source, r.What))
	}
	network := func(name string, rs []result.StreamRate) {
		if len(rs) == 0 {
			fmt.Fprintf(b, "  %-24s %12s\n", name, "not measured")
			return
		}
		for i, r := range rs {
			label := ""
			if i == 0 {
				label = name
			}
			fmt.Fprintf(b, "  %-24s %12s  %s, %s\n", label, metric.FormatByteRate(r.BytesPerSecond), metric.Plural(int64(r.Streams), "stream"), provenance(r.Source, r.What))
		}
	}
	rate("data path read", s.SourceRead)
	rate("data path write", s.SourceWrite)
	network("network to backup host", s.NetworkOut)
	network("network back", s.NetworkIn)
	rate("backup path write", s.TargetWrite)
	rate("backup path read", s.TargetRead)
	for _, c := range s.Codecs {
		side := "database host"
		if c.Side == result.SideTarget {
			side = "backup host"
		}
		sample := ""
		if c.Sample != "" {
			sample = ", sample " + c.Sample
		}
		fmt.Fprintf(b, "  %-24s %12s  per core compressing, %s decompressing, ratio %.2f×%s; %s\n",
			c.Codec+" ("+side+")", metric.FormatByteRate(c.CompressPerCore), metric.FormatByteRate(c.DecompressPerCore), c.Ratio, sample, c.Source)
	}
	if s.SourceCores > 0 || s.TargetCores > 0 {
		fmt.Fprintf(b, "  %-24s %s on the database host, %s on the backup host\n", "cores", coresOf(s.SourceCores), coresOf(s.TargetCores))
	}
	where := "the database host"
	if p.CompressAt == result.CompressAtTarget {
		where = "the backup host"
	}
	fmt.Fprintf(b, "\n%s, %s: %s, compression on %s on %s.\n\n", p.Engine, metric.Plural(int64(p.Files), "file"), metric.Plural(int64(p.Streams), "stream"), metric.Plural(int64(p.Threads), "thread"), where)

	rto := ""
	if p.RTO > 0 {
		rto = "RTO " + metric.FormatHours(p.RTO.D().Seconds())
	}
	// The limited-by columns hold two stages the measurements cannot tell
	// apart: "compression (CPU) or the network".
	const row = "%-8s %-11s %10s %10s  %-34s %10s %10s  %-34s %s\n"
	fmt.Fprintf(b, row, "size", "compression", "backup", "rate", "limited by", "restore", "rate", "limited by", rto)
	for _, c := range p.Cells {
		verdict := ""
		if c.RTOMet != nil {
			verdict = "met"
			if !*c.RTOMet {
				verdict = "MISSED"
			}
		}
		backup := hours(c.BackupSeconds)
		if c.CannotJudge != "" {
			backup = "≥ " + backup
		}
		fmt.Fprintf(b, row, metric.FormatDecimalBytes(c.SizeBytes), c.Compression,
			backup, rateOrDash(c.BackupRate), words.Stages(c.BackupBottleneck, c.BackupAlso),
			hours(c.RestoreSeconds), rateOrDash(c.RestoreRate), words.Stages(c.RestoreBottleneck, c.RestoreAlso), verdict)
		if c.SyncSeconds > 0 {
			fmt.Fprintf(b, "%-8s %-11s %10s %10s  %s\n", "", "", "", "", "incl. "+metric.FormatHours(c.SyncSeconds)+" syncing the files written")
		}
		if c.CannotJudge != "" {
			fmt.Fprintf(b, "%-8s %-11s %10s %10s  %s\n", "", "", "", "", c.CannotJudge)
		}
		if c.ZeroingSeconds > 0 {
			fmt.Fprintf(b, "%-8s %-11s %10s %10s  %-34s %10s %10s  %s\n", "", "", "", "", "", "", "",
				"incl. "+metric.FormatHours(c.ZeroingSeconds)+" zeroing the data files")
		}
	}
	modelNotes(b, p.Notes)
}

// modelNotes writes a plan's notes: the facts its model used and what it
// cannot know.
func modelNotes(b *strings.Builder, notes []string) {
	if len(notes) == 0 {
		return
	}
	b.WriteString("\nThe model:\n")
	for _, n := range notes {
		var w strings.Builder
		wrap(&w, n, "    ", 96)
		b.WriteString("  - " + strings.TrimPrefix(w.String(), "    "))
	}
}

func provenance(source, what string) string {
	if what == "" {
		return source
	}
	return source + ": " + what
}

func hours(s float64) string {
	if s <= 0 {
		return "-"
	}
	return metric.FormatHours(s)
}

func rateOrDash(r float64) string {
	if r <= 0 {
		return "-"
	}
	return metric.FormatByteRate(r)
}

func coresOf(n int) string {
	if n <= 0 {
		return "not known"
	}
	return fmt.Sprint(n)
}
