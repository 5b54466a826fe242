package output_test

import (
	"bytes"
	"fmt"
	stdhtml "html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/html"
	"github.com/narrows/narrows/internal/output/table"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// factsFixture is a host's facts: a 10 Gbit/s NIC with jumbo frames.
func factsFixture(host, addr string) *result.Facts {
	return &result.Facts{Hostname: host, OS: "linux", Kernel: "6.1.0-18-amd64", CPU: "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz", Cores: 32,
		MemoryBytes: 256 << 30, Narrows: "0.1.0",
		Interfaces: []result.NIC{{Name: "eth0", Driver: "ixgbe", DriverVersion: "6.1.0-18-amd64", Firmware: "0x800009e0", MTU: 9000, SpeedMbps: 10000,
			Addresses: []string{addr}, Offloads: map[string]bool{"tso": true, "gso": true, "gro": true, "lro": false, "rx-checksum": true, "tx-checksum": true},
			Coalescing: map[string]int64{"rx-usecs": 50, "tx-usecs": 50, "adaptive-rx": 1}}},
		TCP: &result.TCPSettings{CongestionControl: "cubic", RmemMax: 6 << 20, WmemMax: 4 << 20}}
}

// doctorFixture is a doctor run: the fixed stream, disk, db repl and
// backup plan as its steps, one step skipped, the facts of both ends.
func doctorFixture() *result.Report {
	ivs, reps := allFixtures()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rep := result.NewReport("doctor", "db2:7447", result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}, at)
	rep.Agent = "0.1.0"
	rep.Facts, rep.AgentFacts = factsFixture("db1", "10.0.0.1/24"), factsFixture("db2", "10.0.0.2/24")
	step := func(name, area, key string, took time.Duration) result.DoctorStep {
		return result.DoctorStep{Name: name, Area: area, Status: result.StepRan, Elapsed: result.Seconds(took), Budget: result.Seconds(10 * time.Second),
			Report: reps[key], Intervals: ivs[key]}
	}
	d := &result.Doctor{Budget: result.Seconds(time.Minute), Elapsed: result.Seconds(41 * time.Second), Steps: []result.DoctorStep{
		step("net stream", "network", "stream", 6*time.Second),
		step("net rr", "network", "rr", 2*time.Second),
		step("disk local", "storage", "disk", 21*time.Second),
		step("db repl", "replication", "db_repl_pg", 5*time.Second),
		step("plan backup", "backup", "plan_backup", 7*time.Second),
		{Name: "db ping", Area: "database", Status: result.StepSkipped, Why: "no database named: give --dsn or set NARROWS_DSN"},
	}}
	for _, s := range d.Steps {
		if s.Report != nil {
			d.Verdicts = append(d.Verdicts, s.Report.Findings...)
		}
	}
	slices.SortStableFunc(d.Verdicts, func(a, b result.Finding) int {
		return map[bool]int{true: 0, false: 1}[a.Severity == "warning"] - map[bool]int{true: 0, false: 1}[b.Severity == "warning"]
	})
	rep.Doctor = d
	rep.Findings = advisor.Advise(rep)
	return rep
}

// htmlGolden are the reports whose HTML is kept: one of each kind of chart.
var htmlGolden = []string{"stream", "rr", "disk", "db_repl_pg", "plan_backup", "plan_replica", "doctor", "fleet_disk", "fleet_sweep", "fleet_net"}

func TestHTMLGolden(t *testing.T) {
	ivs, reps := allFixtures()
	reps["doctor"] = doctorFixture()
	// The stream with the facts of its host: a 100 Mbit/s NIC, the link
	// line on the chart's scale (the doctor's 10 Gbit/s is off it).
	st := *reps["stream"]
	st.Facts = factsFixture("db1", "10.0.0.1/24")
	st.Facts.Interfaces[0].SpeedMbps = 100
	reps["stream"] = &st
	for _, name := range htmlGolden {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := html.Render(&b, reps[name], ivs[name]); err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			html.Render(&again, reps[name], ivs[name])
			if !bytes.Equal(b.Bytes(), again.Bytes()) {
				t.Fatal("two renderings of the same records differ")
			}
			path := filepath.Join("testdata", name+".html.golden")
			if *update {
				os.WriteFile(path, b.Bytes(), 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/output/ -run HTML -update)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Fatalf("HTML differs from %s (run with -update and look at the diff)", path)
			}
		})
	}
}

var (
	tagRe    = regexp.MustCompile(`<[^>]*>`)
	styleRe  = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
	urlRe    = regexp.MustCompile(`(?i)url\(\s*['"]?([^'")]*)`)
	attrRe   = regexp.MustCompile(`(?i)\s(src|href|action|srcset|poster|xlink:href|formaction|background|ping)\s*=\s*"([^"]*)"`)
	scriptRe = regexp.MustCompile(`(?i)<script|\son[a-z]+\s*=|javascript:`)
)

// TestHTMLSelfContained: every report names nothing outside itself: no
// scheme, no protocol-relative reference, no import, no url() but data:,
// no script; its CSP forbids anything else and allows its stylesheet by
// the stylesheet's hash.
func TestHTMLSelfContained(t *testing.T) {
	ivs, reps := allFixtures()
	reps["doctor"] = doctorFixture()
	for name, rep := range reps {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := html.Render(&b, rep, ivs[name]); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			for _, bad := range []string{"http:", "https:", "@import", "ftp:", "<link", "<img", "<iframe", "<object", "<embed"} {
				if strings.Contains(strings.ToLower(page), bad) {
					t.Errorf("%q in the page", bad)
				}
			}
			if m := scriptRe.FindString(page); m != "" {
				t.Errorf("script in the page: %q", m)
			}
			for _, tag := range tagRe.FindAllString(page, -1) {
				if strings.Contains(tag, "//") {
					t.Errorf("a reference in a tag: %s", tag)
				}
				for _, m := range attrRe.FindAllStringSubmatch(tag, -1) {
					if !(strings.EqualFold(m[1], "href") && strings.HasPrefix(m[2], "#")) {
						t.Errorf("%s=%q: only in-page links are allowed", m[1], m[2])
					}
				}
			}
			css := styleRe.FindStringSubmatch(page)
			if css == nil {
				t.Fatal("no stylesheet")
			}
			if strings.Contains(css[1], "//") {
				t.Error("// in the stylesheet")
			}
			for _, m := range urlRe.FindAllStringSubmatch(page, -1) {
				if !strings.HasPrefix(m[1], "data:") && !strings.HasPrefix(m[1], "#") {
					t.Errorf("url(%s)", m[1])
				}
			}
			if !strings.Contains(page, `http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;sha256-`) {
				t.Errorf("no CSP forbidding everything but the stylesheet in:\n%.600s", page)
			}
			if !strings.Contains(html.CSP, hashCSS(css[1])) {
				t.Errorf("the CSP's hash is not the stylesheet's: %s", html.CSP)
			}
		})
	}
}

// htmlBudget is the most a doctor's report may weigh, whatever the run's
// length: every step of the registry (16), each with an hour of intervals
// (the charts thin each series to 600 points, the appendix shows 60
// interval rows a step). make run's report, 16 steps in 60 s, is about
// 140 KiB (README).
const htmlBudget = 512 << 10

// TestHTMLSize: a doctor's report of 16 steps, each with an hour of
// intervals, stays within htmlBudget.
func TestHTMLSize(t *testing.T) {
	rep := doctorFixture()
	steps := rep.Doctor.Steps
	for i := 0; len(rep.Doctor.Steps) < 16; i++ {
		s := steps[i%len(steps)]
		s.Name += fmt.Sprintf(" (again %d)", i+1)
		rep.Doctor.Steps = append(rep.Doctor.Steps, s)
	}
	for i := range rep.Doctor.Steps {
		s := &rep.Doctor.Steps[i]
		if len(s.Intervals) == 0 {
			continue
		}
		long := make([]result.Interval, 0, 3600)
		for j := range 3600 {
			iv := s.Intervals[j%len(s.Intervals)]
			iv.Start, iv.End = result.Seconds(time.Duration(j)*time.Second), result.Seconds(time.Duration(j+1)*time.Second)
			long = append(long, iv)
		}
		s.Intervals = long
	}
	var b bytes.Buffer
	if err := html.Render(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("doctor report with %d steps, 3600 intervals each: %d bytes (budget %d)", len(rep.Doctor.Steps), b.Len(), htmlBudget)
	if b.Len() > htmlBudget {
		t.Fatalf("the report is %d bytes, over its budget of %d KiB", b.Len(), htmlBudget>>10)
	}
}

// TestTerminalAndPageAgree (issue 26): the terminal's table and the HTML
// report name each cell's bottleneck and time in the same words (the
// page said "source disk" and "2 h 22 min" where the table said "the
// database host's disk" and "2.4 h").
func TestTerminalAndPageAgree(t *testing.T) {
	rep := planFixture()
	var tb, hb bytes.Buffer
	if err := table.New(&tb).Report(rep); err != nil {
		t.Fatal(err)
	}
	if err := html.Render(&hb, rep, nil); err != nil {
		t.Fatal(err)
	}
	page := stdhtml.UnescapeString(hb.String())
	n := 0
	for _, c := range rep.BackupPlan.Cells {
		for _, w := range []string{words.Stages(c.BackupBottleneck, c.BackupAlso), words.Stages(c.RestoreBottleneck, c.RestoreAlso),
			metric.FormatHours(c.BackupSeconds), metric.FormatHours(c.RestoreSeconds)} {
			n++
			if !strings.Contains(tb.String(), w) || !strings.Contains(page, w) {
				t.Errorf("%q: in the table %v, on the page %v", w, strings.Contains(tb.String(), w), strings.Contains(page, w))
			}
		}
	}
	if n < 8 {
		t.Fatalf("the fixture's plan has %d cells' words to compare", n)
	}
}

// TestHTMLNamesDirectionsByHost (issue 27): a stream the agent sent is
// named from its host to this one, by their host names, in the chart's
// legend, the network team's "Between" and its figures; the report said
// "this host → agent" for a reverse stream.
func TestHTMLNamesDirectionsByHost(t *testing.T) {
	ivs, reps := allFixtures()
	st := *reps["stream"]
	st.Facts, st.AgentFacts = factsFixture("db1", "10.0.0.1/24"), factsFixture("backup7", "10.0.0.9/24")
	s := *st.Stream
	s.Runs = slices.Clone(s.Runs)
	for i := range s.Runs {
		s.Runs[i].Direction = "reverse"
	}
	st.Stream = &s
	rev := slices.Clone(ivs["stream"])
	for i := range rev {
		rev[i].Direction = "reverse"
	}
	var b bytes.Buffer
	if err := html.Render(&b, &st, rev); err != nil {
		t.Fatal(err)
	}
	// Above the appendix, whose raw figures are the terminal's columns.
	page, _, _ := strings.Cut(b.String(), `<section id="appendix"`)
	for _, want := range []string{"1 stream backup7 → db1", "<dt>Between</dt><dd>the agent at " + st.Target + " (backup7) → this host (db1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	for _, wrong := range []string{"→ agent", "← agent", "db1 → backup7"} {
		if strings.Contains(page, wrong) {
			t.Errorf("the page says %q of a stream backup7 sent", wrong)
		}
	}
}
