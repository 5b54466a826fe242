// Package table renders records for a person at a terminal: interval rows
// printed as they arrive (fixed widths, so no row waits for another), then
// the summary and the findings.
package table

import (
	"fmt"
	"io"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// Writer writes records to w. It remembers only which header it printed
// (and, for db repl, how wide it made the replica column).
type Writer struct {
	w      io.Writer
	header string
	nameW  int // db repl: the width of the replica column
}

// New returns a Writer.
func New(w io.Writer) *Writer { return &Writer{w: w} }

func span(iv result.Interval) string {
	return fmt.Sprintf("%.2f-%.2f s", iv.Start.D().Seconds(), iv.End.D().Seconds())
}

func dur(s result.Seconds) string { return metric.FormatDuration(s.D()) }

var arrows = map[string]string{"forward": "→ agent", "reverse": "← agent"}

// Interval writes one row, with the header before the first.
func (t *Writer) Interval(iv result.Interval) error {
	var err error
	switch iv.Probe {
	case "stream":
		if t.header != "stream" {
			t.header = "stream"
			if _, err := fmt.Fprintf(t.w, "%-8s %-8s %-14s %14s %6s %10s %9s %9s\n", "phase", "dir", "interval", "throughput", "retr", "cwnd", "rtt", "rtt var"); err != nil {
				return err
			}
		}
		retr, cwnd, rtt, rttv := "-", "-", "-", "-"
		if iv.TCP != nil {
			retr, cwnd = metric.FormatCount(iv.TCP.Retransmits), metric.FormatBytes(iv.TCP.CwndBytes)
			rtt, rttv = dur(iv.TCP.RTT), dur(iv.TCP.RTTVar)
		}
		_, err = fmt.Fprintf(t.w, "%-8s %-8s %-14s %14s %6s %10s %9s %9s\n", phaseName(iv.Phase, iv.Streams), arrows[iv.Direction], span(iv),
			metric.FormatBitRate(iv.Throughput), retr, cwnd, rtt, rttv)
	case "rr":
		if t.header != "rr" {
			t.header = "rr"
			if _, err := fmt.Fprintf(t.w, "%-14s %12s %9s %9s %9s %9s %9s\n", "interval", "round trips/s", "p50", "p90", "p99", "p99.9", "max"); err != nil {
				return err
			}
		}
		l := iv.RTT
		if l == nil {
			l = &result.Latency{}
		}
		_, err = fmt.Fprintf(t.w, "%-14s %12s %9s %9s %9s %9s %9s\n", span(iv), metric.FormatCount(int64(iv.RoundTripRate+0.5)),
			dur(l.P50), dur(l.P90), dur(l.P99), dur(l.P999), dur(l.Max))
	case result.ProbeDBPing, result.ProbeRepl, result.ProbeDBLoad: // db.go
		err = t.dbInterval(iv)
	case "disk":
		err = t.diskInterval(iv) // disk.go
	case result.ProbeCommit:
		err = t.commitInterval(iv) // commit.go
	case result.ProbeWatch:
		err = t.watchInterval(iv) // watch.go
	case result.ProbeFleetWatch:
		err = t.fleetWatchInterval(iv) // fleetwatch.go
	}
	return err
}

func phaseName(phase string, streams int) string {
	switch phase {
	case result.PhaseParallel:
		return fmt.Sprintf("%d strms", streams)
	case result.PhaseSteered:
		return "steered"
	case result.PhaseOffloads:
		return "offl on"
	case result.PhaseAsIs:
		return "as is"
	}
	return "1 strm"
}

// Report writes the summary and the findings.
func (t *Writer) Report(r *result.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nnarrows %s → %s", r.Command, r.Target)
	if r.Agent != "" {
		fmt.Fprintf(&b, " (agent %s)", r.Agent)
	}
	b.WriteString("\n")
	if r.Unauthenticated {
		b.WriteString("UNAUTHENTICATED: the agent ran without a secret (--insecure); nothing proves these figures came from it.\n")
	}
	if write := summarizer(r.Part()); write != nil {
		write(&b)
	}
	if r.Partial {
		fmt.Fprintf(&b, "PARTIAL: the run stopped early (%s); the figures above are what was measured until then.\n", r.Error)
	}
	if len(r.Findings) > 0 {
		b.WriteString("\nWhat it means:\n")
		for _, f := range r.Findings {
			mark := "•"
			if f.Severity == "warning" {
				mark = "!"
			}
			fmt.Fprintf(&b, "  %s %s\n", mark, f.Summary)
			if f.Detail != "" {
				wrap(&b, f.Detail, "    ", 96)
			}
		}
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}

func streamSummary(b *strings.Builder, s *result.Stream) {
	fmt.Fprintf(b, "%-8s %-8s %14s %11s %11s %9s %9s %9s %6s %s\n", "phase", "dir", "throughput", "sent", "received", "time", "rtt", "min rtt", "retr", "cpu client/agent")
	for _, r := range s.Runs {
		rtt, minRTT, retr := "-", "-", "-"
		if r.TCP != nil {
			rtt, minRTT, retr = dur(r.TCP.RTT), dur(r.TCP.MinRTT), metric.FormatCount(r.TCP.Retransmits)
		}
		cpu := "n/a"
		if r.CPU.Available {
			cpu = fmt.Sprintf("%.0f%% / %.0f%% of a core", r.CPU.Local, r.CPU.Remote)
		}
		fmt.Fprintf(b, "%-8s %-8s %14s %11s %11s %9s %9s %9s %6s %s\n", phaseName(r.Phase, r.Streams), arrows[r.Direction],
			metric.FormatBitRate(r.Throughput), metric.FormatBytes(r.SentBytes), metric.FormatBytes(r.ReceivedBytes),
			dur(r.Duration), rtt, minRTT, retr, cpu)
		if r.TCPUnavailable != "" {
			fmt.Fprintf(b, "         (%s)\n", r.TCPUnavailable)
		}
		if r.Stopped != "" {
			fmt.Fprintf(b, "         (stopped: %s)\n", r.Stopped)
		}
	}
	if t := firstTCP(s); t != nil {
		stalled := fmt.Sprintf("stalled on receiver window %.0f%%, on send buffer %.0f%%", 100*t.RwndLimited, 100*t.SndbufLimited)
		if t.StallsUnknown {
			stalled = "stall times not reported (Windows before 1809)"
		}
		fmt.Fprintf(b, "window   bandwidth-delay product %s at %s RTT; peer window %s, max cwnd %s; %s\n",
			metric.FormatBytes(t.BDPBytes), dur(t.RTT), metric.FormatBytes(t.SndWndBytes), metric.FormatBytes(t.MaxCwnd), stalled)
	}
}

func firstTCP(s *result.Stream) *result.TCPSummary {
	if len(s.Runs) == 0 {
		return nil
	}
	return s.Runs[0].TCP
}

func rrSummary(b *strings.Builder, r *result.RR) {
	c := r.Config
	paced := ""
	if c.Rate > 0 {
		paced = fmt.Sprintf(" (paced at %s/s by --rate)", metric.FormatCount(int64(c.Rate+0.5)))
	}
	fmt.Fprintf(b, "round trips  %s in %s = %s/s%s, one outstanding, %s request, %s response\n", metric.FormatCount(r.RoundTrips), dur(r.Duration),
		metric.FormatCount(int64(r.Rate+0.5)), paced, metric.FormatBytes(c.RequestBytes), metric.FormatBytes(c.ResponseBytes))
	fmt.Fprintf(b, "full rtt     min %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s\n",
		dur(r.Min), dur(r.P50), dur(r.P90), dur(r.P99), dur(r.P999), dur(r.Max), dur(r.Mean))
	fmt.Fprintf(b, "connect      %s (TCP handshake of the measuring connection)\n", dur(r.Connect))
	if r.TCPUnavailable != "" {
		fmt.Fprintf(b, "kernel rtt   (%s)\n", r.TCPUnavailable)
	} else {
		fmt.Fprintf(b, "kernel rtt   %s smoothed, %s min, %d retransmits (TCP's own view, without the programs at each end)\n", dur(r.KernelRTT), dur(r.KernelMinRTT), r.Retransmits)
	}
	if r.CPU.Available {
		fmt.Fprintf(b, "cpu          client %.0f%%, agent %.0f%% of a core\n", r.CPU.Local, r.CPU.Remote)
	}
	if r.Stopped != "" {
		fmt.Fprintf(b, "stopped      %s\n", r.Stopped)
	}
}

func wrap(b *strings.Builder, text, indent string, width int) {
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
}

// summarizer is what writes one part's summary, nil for a kind the table
// does not know (TestSummaryOfEveryPart holds it to result.Parts).
func summarizer(p result.Part) func(*strings.Builder) {
	switch p := p.(type) {
	case *result.Stream:
		return func(b *strings.Builder) { streamSummary(b, p) }
	case *result.RR:
		return func(b *strings.Builder) { rrSummary(b, p) }
	case *result.Commit:
		return func(b *strings.Builder) { commitSummary(b, p) } // commit.go
	case *result.MTU:
		return func(b *strings.Builder) { mtuSummary(b, p) } // mtu.go
	case *result.Host:
		return func(b *strings.Builder) { hostSummary(b, p) } // host.go
	case *result.Loaded:
		return func(b *strings.Builder) { loadedSummary(b, p) } // loaded.go
	case *result.DBPing:
		return func(b *strings.Builder) { pingSummary(b, p) } // db.go
	case *result.Repl:
		return func(b *strings.Builder) { replSummary(b, p) }
	case *result.DBLoad:
		return func(b *strings.Builder) { loadSummary(b, p) }
	case *result.Watch:
		return func(b *strings.Builder) { watchSummary(b, p) } // watch.go
	case *result.Disk:
		return func(b *strings.Builder) { diskSummary(b, p) } // disk.go
	case *result.Fleet:
		return func(b *strings.Builder) { fleetSummary(b, p) } // fleet.go
	case *result.FleetNet:
		return func(b *strings.Builder) { fleetNetSummary(b, p) } // fleetnet.go
	case *result.FleetWatch:
		return func(b *strings.Builder) { fleetWatchSummary(b, p) } // fleetwatch.go
	case *result.BackupPlan:
		return func(b *strings.Builder) { planSummary(b, p) } // plan.go
	case *result.SyncPlan:
		return func(b *strings.Builder) { syncPlanSummary(b, p) } // plansync.go
	case *result.ReplicaPlan:
		return func(b *strings.Builder) { replicaSummary(b, p) } // planreplica.go
	case *result.ChattyPlan:
		return func(b *strings.Builder) { chattySummary(b, p) } // planchatty.go
	case *result.Doctor:
		// Doctor's own page is the command line's (its verdicts and
		// steps); its steps' Reports are each summarised on their own.
		return func(*strings.Builder) {}
	}
	return nil
}
