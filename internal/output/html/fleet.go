package html

import (
	"fmt"
	"html/template"
	"slices"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
)

// The fleet's charts and tables (issue 29): each host's figures, the
// fleet's sums, its merged latency and, for a sweep, its curve. The rows
// of the hosts the verdicts single out (result.Finding.Hosts) are marked:
// the page says what the advisor said, it does not judge again.
const (
	ChartFleetLatency = "chart-fleet-latency"
	ChartFleetIOPS    = "chart-fleet-iops"
	ChartFleetSLO     = "chart-fleet-slo"
	FleetHostsClass   = "fleet-hosts"
	FleetTotalsClass  = "fleet-totals"
	FleetLinksClass   = "fleet-links"
	OutlierClass      = "outlier"
)

// maxHostRows bounds the hosts drawn beside the fleet on the latency
// chart: past it, the fleet's own rows only (each host's quantiles are in
// the table).
const maxHostRows = 8

// fleetView is fleet disk's tables.
type fleetView struct {
	ID     string
	Hosts  []fleetHostTable
	Totals fleetTotals
	Notes  []string
}

// fleetHostTable is one pattern's hosts.
type fleetHostTable struct {
	N       int // the pattern's place in the run, from 1
	Caption string
	Rows    []fleetHostRow
	Fleet   fleetHostRow
}

type fleetHostRow struct {
	Host, IOPS, MBs, P50, P99, P999, Share, Began, Error string
	Named                                                bool
}

// fleetTotals is the fleet's sums, a row per pattern (per step of a
// sweep), with each step's objective when there is one.
type fleetTotals struct {
	SLO  string // "p99 ≤ 2.00 ms"; "" without one
	Rows []fleetTotalRow
}

type fleetTotalRow struct {
	Pattern, Hosts, IOPS, MBs, PerHost, Median, PerGiB, P50, P99, P999, Held string
	Knee                                                                     bool
}

// named is the hosts the findings single out.
func named(rep *result.Report) map[string]bool {
	m := map[string]bool{}
	for _, f := range rep.Findings {
		for _, h := range f.Hosts {
			m[h] = true
		}
	}
	return m
}

// shownPatterns are the patterns whose hosts get a table: every one, or
// for a sweep each curve's knee (its deepest step without one), as the
// terminal's table shows them; why says which step it is.
func shownPatterns(f *result.Fleet) (idx []int, why map[int]string) {
	why = map[int]string{}
	if f.Sweep == nil {
		for i := range f.Config.Patterns {
			idx = append(idx, i)
		}
		return idx, why
	}
	for _, c := range f.Sweep.Curves {
		if len(c.Points) == 0 {
			continue
		}
		k, w := len(c.Points)-1, "the deepest step (no knee)"
		if c.Knee != nil {
			k, w = *c.Knee, "at the knee"
		}
		if p := c.Points[k].Pattern; !slices.Contains(idx, p) {
			idx, why[p] = append(idx, p), w
		}
	}
	slices.Sort(idx)
	return idx, why
}

func fleetOf(id string, rep *result.Report) *fleetView {
	f := rep.Fleet
	v := &fleetView{ID: id}
	odd := named(rep)
	idx, why := shownPatterns(f)
	for _, i := range idx {
		if i >= len(f.Config.Patterns) {
			continue
		}
		t := fleetHostTable{N: i + 1, Caption: text(f.Config.Patterns[i])}
		if w := why[i]; w != "" {
			t.Caption += ", " + w
		}
		var fp result.FleetPattern
		if i < len(f.Patterns) {
			fp = f.Patterns[i]
		}
		for _, h := range f.Hosts {
			r := fleetHostRow{Host: text(h.Name), Named: odd[h.Name]}
			if h.Disk == nil || i >= len(h.Disk.Patterns) {
				r.Error = text(h.Error)
				if r.Error == "" {
					r.Error = "no figures"
				}
				t.Rows = append(t.Rows, r)
				continue
			}
			p := h.Disk.Patterns[i]
			r.IOPS, r.MBs = count(p.IOPS), metric.FormatByteRate(p.Throughput)
			r.P50, r.P99, r.P999 = durOr(p.P50), durOr(p.P99), durOr(p.P999)
			r.Share, r.Began = "-", "-"
			if fp.MedianIOPS > 0 {
				r.Share = fmt.Sprintf("%.0f%%", 100*p.IOPS/fp.MedianIOPS)
			}
			if h.StartedAfter != nil {
				r.Began = "+" + metric.FormatDuration(h.StartedAfter.D())
			}
			if p.Stopped != "" {
				r.Error = "stopped: " + text(p.Stopped)
			}
			t.Rows = append(t.Rows, r)
		}
		t.Fleet = fleetHostRow{Host: fmt.Sprintf("fleet (%s)", metric.Plural(int64(fp.Hosts), "host")), IOPS: count(fp.IOPS), MBs: metric.FormatByteRate(fp.Throughput),
			P50: "-", P99: "-", P999: "-"}
		if l := fp.Latency; l != nil {
			t.Fleet.P50, t.Fleet.P99, t.Fleet.P999 = durOr(l.P50), durOr(l.P99), durOr(l.P999)
		}
		v.Hosts = append(v.Hosts, t)
	}
	var sw *result.FleetSweep
	if f.Sweep != nil {
		sw = f.Sweep
		if sw.SLO != nil {
			v.Totals.SLO = sw.SLO.Name + " ≤ " + metric.FormatDuration(sw.SLO.Bound.D())
		}
	}
	precision := 0.0
	for i, fp := range f.Patterns {
		r := fleetTotalRow{Pattern: text(fp.Name), Hosts: fmt.Sprint(fp.Hosts), IOPS: count(fp.IOPS), MBs: metric.FormatByteRate(fp.Throughput),
			PerHost: "-", Median: count(fp.MedianIOPS), PerGiB: "-", P50: "-", P99: "-", P999: "-"}
		if fp.Hosts > 0 {
			r.PerHost = count(fp.IOPS / float64(fp.Hosts))
		}
		switch {
		case fp.IOPSPerGiB >= 100:
			r.PerGiB = count(fp.IOPSPerGiB)
		case fp.IOPSPerGiB > 0:
			r.PerGiB = fmt.Sprintf("%.3g", fp.IOPSPerGiB)
		}
		if l := fp.Latency; l != nil {
			r.P50, r.P99, r.P999 = durOr(l.P50), durOr(l.P99), durOr(l.P999)
			precision = max(precision, fp.Precision)
		}
		if sw != nil && sw.SLO != nil {
			r.Held, r.Knee = stepHeld(sw, i)
		}
		v.Totals.Rows = append(v.Totals.Rows, r)
		for _, m := range fp.HistogramsMissing {
			v.Notes = append(v.Notes, fmt.Sprintf("%s: the merged latency leaves out %s", text(fp.Name), text(m)))
		}
	}
	if precision > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("The merged latency is every host's I/Os together, from their histograms merged (never a mean of the hosts' quantiles); "+
			"each histogram travels coarsened, so a merged quantile reads at most %.1f%% high, never low.", 100*precision))
	}
	if s := f.Start; s != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("Started together: %s began %s after the instant at the median, %s at most (skew %s).",
			metric.Plural(int64(s.Hosts), "host"), metric.FormatDuration(s.MedianAfter.D()), metric.FormatDuration(s.MaxAfter.D()), metric.FormatDuration(s.Skew.D())))
	}
	return v
}

// stepHeld is pattern i's step against the sweep's objective: held, over,
// not judged; and whether it is its curve's knee.
func stepHeld(sw *result.FleetSweep, i int) (string, bool) {
	for _, c := range sw.Curves {
		for j, pt := range c.Points {
			if pt.Pattern != i {
				continue
			}
			switch {
			case pt.Held == nil:
				return "not judged", false
			case c.Knee != nil && *c.Knee == j:
				return "held: the knee", true
			case *pt.Held:
				return "held", false
			}
			return "over", false
		}
	}
	return "", false
}

// fleetCharts: the fleet's merged latency, and a sweep's curve.
func fleetCharts(id string, f *result.Fleet) []template.HTML {
	var out []template.HTML
	if c, ok := fleetLatencyChart(id, f); ok {
		out = append(out, c)
	}
	if sw := f.Sweep; sw != nil && len(sw.Curves) > 0 {
		out = append(out, fleetCurveCharts(id, f)...)
	}
	return out
}

// fleetLatencyChart: each pattern's merged quantiles (every host's I/Os
// together, as the result holds them: quantiles, not bins), with each
// host's own beneath when the fleet is small enough to read them.
func fleetLatencyChart(id string, f *result.Fleet) (template.HTML, bool) {
	var rows []distRow
	hosts := f.Sweep == nil && len(f.Hosts) <= maxHostRows
	for i, fp := range f.Patterns {
		if fp.Latency == nil {
			continue
		}
		rows = append(rows, latenciesRow("fleet: "+text(fp.Name), *fp.Latency))
		if !hosts {
			continue
		}
		for _, h := range f.Hosts {
			if h.Disk != nil && i < len(h.Disk.Patterns) && h.Disk.Patterns[i].IOs > 0 {
				rows = append(rows, latenciesRow("  "+text(h.Name), h.Disk.Patterns[i].Latencies))
			}
		}
	}
	if len(rows) == 0 {
		return "", false
	}
	title := "The fleet's latency, every host's I/Os merged"
	if hosts {
		title += ", and each host's"
	} else if f.Sweep != nil {
		title += ", at each queue depth"
	}
	return logDotPlot(id+"-"+ChartFleetLatency, ChartFleetLatency, title+" (log scale)", rows), true
}

// fleetCurveCharts: the fleet's IOPS at each queue depth, and its
// latency (the objective's quantile, else p99) against the objective,
// each curve's knee marked on both.
func fleetCurveCharts(id string, f *result.Fleet) []template.HTML {
	sw := f.Sweep
	q, qname := 0.99, "p99"
	if sw.SLO != nil {
		q, qname = sw.SLO.Quantile, sw.SLO.Name
	}
	var iops, lat []series
	var knees []vline
	var at []float64
	for _, d := range sw.Depths {
		at = append(at, float64(d))
	}
	for _, c := range sw.Curves {
		is, ls := series{name: text(c.Shape)}, series{name: text(c.Shape) + " " + qname}
		for _, pt := range c.Points {
			is.pts = append(is.pts, point{float64(pt.QD), pt.IOPS})
			if pt.Pattern < len(f.Patterns) {
				if l := f.Patterns[pt.Pattern].Latency; l != nil {
					ls.pts = append(ls.pts, point{float64(pt.QD), l.Quantile(q).D().Seconds()})
				}
			}
			if !slices.Contains(at, float64(pt.QD)) {
				at = append(at, float64(pt.QD))
			}
		}
		iops, lat = append(iops, is), append(lat, ls)
		if c.Knee != nil && *c.Knee < len(c.Points) {
			k := c.Points[*c.Knee]
			label := fmt.Sprintf("knee: QD %d, %s IOPS", k.QD, count(k.IOPS))
			if len(sw.Curves) > 1 {
				label = text(c.Shape) + " " + label
			}
			knees = append(knees, vline{float64(k.QD), label})
		}
	}
	slices.Sort(at)
	xa := xAxis{label: "queue depth on each host (all hosts at once)", at: at}
	out := []template.HTML{axesChart(id+"-"+ChartFleetIOPS, ChartFleetIOPS, "The fleet's IOPS at each queue depth, every host at once", iops, nil, knees, countTick, xa)}
	var refs []hline
	title := "The fleet's " + qname + " at each queue depth (every host's I/Os merged)"
	if sw.SLO != nil {
		refs = append(refs, hline{sw.SLO.Bound.D().Seconds(), "objective " + sw.SLO.Name + " ≤ " + metric.FormatDuration(sw.SLO.Bound.D())})
		title += ", against the objective"
	}
	out = append(out, axesChart(id+"-"+ChartFleetSLO, ChartFleetSLO, title, lat, refs, knees, secondsTick, xa))
	return out
}

// fleetNetView is fleet net's tables.
type fleetNetView struct {
	ID     string
	Rows   []fleetNetRow
	Total  *fleetNetRow
	Spread string
	Links  []fleetLinkRow
	Notes  []string
}

type fleetNetRow struct {
	Host, Received, Share, Wire, RTT, Retransmits, Began, Each, Error string
	Named                                                             bool
}

type fleetLinkRow struct {
	Interface, Hosts, Wire, Rate, Share, Note string
}

func fleetNetOf(id string, rep *result.Report) *fleetNetView {
	f := rep.FleetNet
	v := &fleetNetView{ID: id}
	odd := named(rep)
	for _, h := range f.Hosts {
		r := fleetNetRow{Host: text(h.Name), Named: odd[h.Name], Error: text(h.Error)}
		s := h.Stream
		if s == nil {
			if r.Error == "" {
				r.Error = "no figures"
			}
			v.Rows = append(v.Rows, r)
			continue
		}
		r.Received, r.Wire, r.Share, r.RTT, r.Retransmits, r.Began = metric.FormatBitRate(s.Throughput), bitRateOr(s.WireThroughput), "-", "-", "-", "-"
		if h.Share > 0 {
			r.Share = fmt.Sprintf("%.0f%%", 100*h.Share)
		}
		if t := s.TCP; t != nil {
			r.RTT, r.Retransmits = durOr(t.RTT), metric.FormatCount(t.Retransmits)
		}
		if h.StartedAfter != nil {
			r.Began = "+" + metric.FormatDuration(h.StartedAfter.D())
		}
		if len(s.PerStream) > 1 {
			for i, p := range s.PerStream {
				if i > 0 {
					r.Each += ", "
				}
				r.Each += metric.FormatBitRate(p)
			}
		}
		if r.Error != "" {
			r.Error = "not counted: " + r.Error
		} else if s.Stopped != "" {
			r.Error = "stopped: " + text(s.Stopped)
		}
		v.Rows = append(v.Rows, r)
	}
	if t := f.Total; t.Hosts > 0 {
		v.Total = &fleetNetRow{Host: fmt.Sprintf("fleet (%s, %d streams)", metric.Plural(int64(t.Hosts), "replica"), t.Streams),
			Received: metric.FormatBitRate(t.Throughput), Wire: bitRateOr(t.WireThroughput)}
		v.Spread = fmt.Sprintf("Median replica %s, slowest %s, fastest %s.", metric.FormatBitRate(t.MedianHost), metric.FormatBitRate(t.Slowest), metric.FormatBitRate(t.Fastest))
	}
	for _, l := range f.Links {
		r := fleetLinkRow{Interface: text(l.Interface), Hosts: fmt.Sprint(l.Hosts), Wire: bitRateOr(l.WireThroughput), Rate: "not known", Share: "-"}
		if r.Interface == "" {
			r.Interface = "(not known)"
		}
		switch {
		case l.Rate > 0:
			r.Rate, r.Share = metric.FormatBitRate(l.Rate), fmt.Sprintf("%.0f%%", 100*l.Share)
			r.Note = "its NIC's speed"
			if l.RateFrom == result.RateFromAssumed {
				r.Note = "as given by --assume nic"
			}
		case l.SameHost:
			r.Note = text(l.RateUnknown)
		default:
			r.Note = text(l.RateUnknown) + " (give it with --assume nic=RATE)"
		}
		v.Links = append(v.Links, r)
	}
	if s := f.Start; s != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("Started together: %s' Start sent %s after the instant at the median, %s at most (skew %s).",
			metric.Plural(int64(s.Hosts), "host"), metric.FormatDuration(s.MedianAfter.D()), metric.FormatDuration(s.MaxAfter.D()), metric.FormatDuration(s.Skew.D())))
	}
	return v
}

// text is a string from a run (a host's name, an agent's error) as the
// page shows it: its control characters escaped (untrusted.Text), as on
// the terminal; the template escapes its markup.
func text(s string) string { return untrusted.Text(s) }

func count(v float64) string { return metric.FormatCount(int64(v + 0.5)) }

func durOr(s result.Seconds) string {
	if s <= 0 {
		return "-"
	}
	return metric.FormatDuration(s.D())
}

func bitRateOr(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	return metric.FormatBitRate(bps)
}

func countTick(v float64) string { return metric.FormatCount(int64(v + 0.5)) }

func secondsTick(v float64) string {
	return metric.FormatDuration(time.Duration(v * float64(time.Second)))
}
