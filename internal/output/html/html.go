// Package html renders a Report as one self-contained HTML file: the
// verdicts first, then a section per area with the figures behind them
// and charts drawn here as inline SVG, what a network team needs to
// reproduce each figure with its own tools, and the machine facts of both
// ends. No script, no font, no request: a Content-Security-Policy in the
// page forbids them all, and the one stylesheet is allowed by its hash.
//
// Render is a pure function of the records, like the table and jsonl
// outputs: no clock, no I/O but its writer, the same bytes for the same
// records.
package html

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/table"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
	"github.com/narrows/narrows/internal/words"
)

//go:embed report.html.tmpl
var pageTmpl string

//go:embed style.css
var styleCSS string

var tmpl = template.Must(template.New("report").Parse(pageTmpl))

// CSP is the page's Content-Security-Policy: nothing may load, the one
// inline stylesheet is allowed by its hash, and no script at all.
var CSP = "default-src 'none'; style-src 'sha256-" + hashOf(styleCSS) + "'; base-uri 'none'; form-action 'none'"

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(h[:])
}

// maxIntervalRows bounds the interval table of one section: the charts
// show every interval; the JSON lines keep them all. At 240 an hour's
// run put 38 KB of rows a step in the report.
const maxIntervalRows = 60

// Render writes the report of rep (and of its interval records).
func Render(w io.Writer, rep *result.Report, intervals []result.Interval) error {
	p := build(rep, intervals)
	var b bytes.Buffer
	if err := tmpl.Execute(&b, p); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

type page struct {
	CSP, Title, Command, Target, Started, Narrows, Agent string
	CSS                                                  template.CSS
	Unauthenticated, Partial                             bool
	Error                                                string
	Doctor                                               *doctorView
	Path                                                 string // doctor's path in one line (words.PathSummary)
	Answers                                              []answerView
	Verdicts                                             []findingView
	Areas                                                []areaView
	Network                                              []netView
	Facts                                                []factsView
	FactsNote                                            string
}

type doctorView struct {
	Budget, Elapsed string
	Steps           []stepRow
}

type stepRow struct {
	Anchor, Name, Area, Status, Why, Elapsed string
}

// answerView is one of the DBA's questions (words.Answers): the verdict
// that answers it, or why there is none.
type answerView struct {
	Question string
	Finding  *findingView
	Else     string
}

type findingView struct {
	Code, Severity, Summary, Detail, Anchor, Where, About string
	Values                                                []string
}

type areaView struct {
	ID, Name string
	Sections []sectionView
}

type sectionView struct {
	ID, Title, Status, Why, Elapsed string
	Charts                          []template.HTML
	Backup                          *backupView
	Fleet                           *fleetView    // fleet.go
	FleetNet                        *fleetNetView // fleet.go
	Figures, Intervals              string
	IntervalCount, IntervalsShown   int
	Findings                        []findingView
}

// build turns the records into the page's view.
func build(rep *result.Report, ivs []result.Interval) page {
	p := page{
		CSP: CSP, CSS: template.CSS(styleCSS), Command: rep.Command, Target: rep.Target,
		Started: rep.StartedAt.UTC().Format(time.RFC3339), Narrows: toolString(rep.Narrows), Agent: rep.Agent,
		Unauthenticated: rep.Unauthenticated, Partial: rep.Partial, Error: rep.Error,
	}
	p.Title = "narrows " + rep.Command
	if rep.Target != "" {
		p.Title += " → " + rep.Target
	}
	facts, agentFacts := rep.Facts, rep.AgentFacts
	if d := rep.Doctor; d != nil {
		dv := &doctorView{Budget: dur(d.Budget), Elapsed: dur(d.Elapsed)}
		where := map[string]stepRow{} // a finding's code and summary → the step it came from
		areas := map[string]*areaView{}
		var order []string
		for i, st := range d.Steps {
			id := fmt.Sprintf("s%d", i+1)
			row := stepRow{Anchor: id, Name: st.Name, Area: st.Area, Status: st.Status, Why: st.Why, Elapsed: dur(st.Elapsed)}
			dv.Steps = append(dv.Steps, row)
			a := areas[st.Area]
			if a == nil {
				a = &areaView{ID: "area-" + slug(st.Area), Name: st.Area}
				areas[st.Area] = a
				order = append(order, st.Area)
			}
			sec := sectionView{ID: id, Title: st.Name, Status: st.Status, Why: st.Why, Elapsed: dur(st.Elapsed)}
			if st.Report != nil {
				fillSection(&sec, id, st.Report, st.Intervals, orFacts(st.Report.Facts, facts), orFacts(st.Report.AgentFacts, agentFacts))
				for _, f := range st.Report.Findings {
					where[f.Code+"\x00"+f.Summary] = row
				}
				p.Network = append(p.Network, netOf(id, st.Name, st.Report, facts, agentFacts)...)
				if facts == nil {
					facts = st.Report.Facts
				}
				if agentFacts == nil {
					agentFacts = st.Report.AgentFacts
				}
			}
			a.Sections = append(a.Sections, sec)
		}
		slices.SortStableFunc(order, func(a, b string) int { return areaRank(a) - areaRank(b) })
		for _, name := range order {
			p.Areas = append(p.Areas, *areas[name])
		}
		at := func(f result.Finding) findingView {
			fv := findingOf(f)
			if row, ok := where[f.Code+"\x00"+f.Summary]; ok {
				fv.Anchor, fv.Where = row.Anchor, row.Name
			}
			return fv
		}
		for _, f := range d.Verdicts {
			p.Verdicts = append(p.Verdicts, at(f))
		}
		for _, a := range words.Answers(rep) {
			av := answerView{Question: a.Question, Else: a.Else}
			if a.Finding != nil {
				fv := at(*a.Finding)
				av.Finding = &fv
			}
			p.Answers = append(p.Answers, av)
		}
		p.Path = words.PathSummary(rep)
		p.Doctor = dv
	} else {
		sec := sectionView{ID: "s1", Title: rep.Command}
		fillSection(&sec, "s1", rep, ivs, rep.Facts, rep.AgentFacts)
		sec.Findings = nil // they are the verdicts, shown first
		p.Areas = []areaView{{ID: "area-" + slug(areaOf(rep)), Name: areaOf(rep), Sections: []sectionView{sec}}}
		for _, f := range rep.Findings {
			fv := findingOf(f)
			fv.Anchor, fv.Where = "s1", rep.Command
			p.Verdicts = append(p.Verdicts, fv)
		}
		p.Network = netOf("s1", rep.Command, rep, facts, agentFacts)
		// A fleet's questions answered first, as doctor's are.
		for _, a := range words.FleetAnswers(rep) {
			av := answerView{Question: a.Question, Else: a.Else}
			if a.Finding != nil {
				fv := findingOf(*a.Finding)
				fv.Anchor, fv.Where = "s1", rep.Command
				av.Finding = &fv
			}
			p.Answers = append(p.Answers, av)
		}
	}
	p.Facts = factsOf(rep, facts, agentFacts)
	if facts == nil && agentFacts == nil {
		p.FactsNote = "This run recorded no machine facts (a narrows that did not collect them, or a plan given by hand)."
	}
	return p
}

// areaRank is a's place in the order the report shows the areas
// (words.Areas); others after, as they came.
func areaRank(a string) int {
	if i := slices.Index(words.Areas, a); i >= 0 {
		return i
	}
	return len(words.Areas)
}

// areaOf is the area of a single command's run.
func areaOf(r *result.Report) string { return words.Area(r.Part()) }

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// fillSection renders one command's figures: the charts for what it
// measured, its summary in the table's words, its interval rows.
func fillSection(sec *sectionView, id string, rep *result.Report, ivs []result.Interval, facts, agentFacts *result.Facts) {
	sec.Charts = charts(id, rep, ivs, facts, agentFacts)
	if rep.BackupPlan != nil {
		sec.Backup = backupOf(id, rep.BackupPlan)
	}
	if rep.Fleet != nil {
		sec.Fleet = fleetOf(id, rep)
	}
	if rep.FleetNet != nil {
		sec.FleetNet = fleetNetOf(id, rep)
	}
	// The terminal's words, through the terminal's sanitiser: a host's
	// name or an agent's error shows its control characters escaped.
	var b strings.Builder
	uw := untrusted.NewWriter(&b)
	summary := *rep
	summary.Findings, summary.Doctor = nil, nil
	table.New(uw).Report(&summary)
	uw.Flush()
	sec.Figures = strings.TrimLeft(b.String(), "\n")
	if len(ivs) > 0 {
		var ib strings.Builder
		iw := untrusted.NewWriter(&ib)
		tw := table.New(iw)
		n := min(len(ivs), maxIntervalRows)
		for _, iv := range ivs[:n] {
			tw.Interval(iv)
		}
		iw.Flush()
		sec.Intervals, sec.IntervalCount, sec.IntervalsShown = ib.String(), len(ivs), n
	}
	for _, f := range rep.Findings {
		sec.Findings = append(sec.Findings, findingOf(f))
	}
	if rep.Partial && sec.Status == "" {
		sec.Status = "partial"
		sec.Why = rep.Error
	}
}

func orFacts(a, b *result.Facts) *result.Facts {
	if a != nil {
		return a
	}
	return b
}

func findingOf(f result.Finding) findingView {
	fv := findingView{Code: text(f.Code), Severity: f.Severity, Summary: text(f.Summary), Detail: text(f.Detail), About: text(f.About)}
	if fv.Severity == "" {
		fv.Severity = "info"
	}
	keys := make([]string, 0, len(f.Values))
	for k := range f.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fv.Values = append(fv.Values, k+" = "+valueString(k, f.Values[k]))
	}
	return fv
}

// valueString formats a finding's value by the unit its name ends with.
func valueString(name string, v float64) string {
	switch {
	case strings.HasSuffix(name, "_bits_per_second"):
		return metric.FormatBitRate(v)
	case strings.HasSuffix(name, "_bytes_per_second"):
		return metric.FormatByteRate(v)
	case strings.HasSuffix(name, "_bytes"):
		return metric.FormatBytes(int64(v))
	case strings.HasSuffix(name, "_seconds"):
		return metric.FormatDuration(time.Duration(v * float64(time.Second)))
	case strings.HasSuffix(name, "_ratio"):
		return fmt.Sprintf("%.3g", v)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return metric.FormatCount(int64(v))
	}
	return fmt.Sprintf("%.4g", v)
}

func dur(s result.Seconds) string {
	if s == 0 {
		return ""
	}
	return metric.FormatDuration(s.D())
}

func toolString(t result.Tool) string {
	s := t.Version
	if t.Commit != "" {
		s += " (" + t.Commit + ")"
	}
	if t.Protocol != 0 {
		s += fmt.Sprintf(", protocol %d", t.Protocol)
	}
	return s
}

// backupView is the backup plan's table: a row per size and compression,
// each time with the stage that limits it marked.
type backupView struct {
	ID   string
	RTO  string
	Rows []backupRow
}

type backupRow struct {
	Size, Compression, BackupBytes string
	Backup, Restore                backupCell
}

type backupCell struct {
	Time, Rate, Bottleneck, Class, Zeroing, RTO string
}

func backupOf(id string, bp *result.BackupPlan) *backupView {
	v := &backupView{ID: id + "-backup-table", RTO: dur(bp.RTO)}
	for _, c := range bp.Cells {
		r := backupRow{Size: metric.FormatDecimalBytes(c.SizeBytes), Compression: c.Compression, BackupBytes: metric.FormatDecimalBytes(c.BackupBytes),
			Backup:  backupCell{Time: metric.FormatHours(c.BackupSeconds), Rate: metric.FormatByteRate(c.BackupRate), Bottleneck: words.Stages(c.BackupBottleneck, c.BackupAlso), Class: "bn-" + slug(c.BackupBottleneck)},
			Restore: backupCell{Time: metric.FormatHours(c.RestoreSeconds), Rate: metric.FormatByteRate(c.RestoreRate), Bottleneck: words.Stages(c.RestoreBottleneck, c.RestoreAlso), Class: "bn-" + slug(c.RestoreBottleneck)}}
		if c.CannotJudge != "" {
			r.Backup.Time = "at least " + r.Backup.Time
			r.Backup.Zeroing = c.CannotJudge
		} else if c.SyncSeconds > 0 {
			r.Backup.Zeroing = "incl. syncing the files " + metric.FormatHours(c.SyncSeconds)
		}
		if c.ZeroingSeconds > 0 {
			r.Restore.Zeroing = "incl. zeroing " + metric.FormatHours(c.ZeroingSeconds)
		}
		if c.RTOMet != nil {
			r.Restore.RTO = "meets the RTO"
			if !*c.RTOMet {
				r.Restore.RTO = "misses the RTO"
			}
		}
		v.Rows = append(v.Rows, r)
	}
	return v
}
