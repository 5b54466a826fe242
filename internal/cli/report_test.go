package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// savedRun writes records as a saved run's JSON lines.
func savedRun(t *testing.T, dir, name string, records ...any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReportHTML: `narrows report` renders any saved run offline, a
// doctor's too, the intervals before the summary in its charts.
func TestReportHTML(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tool := result.Tool{Version: "0.1.0", Protocol: 1}
	rr := result.NewReport("net rr", "db2:7447", tool, at)
	lat := result.Latency{Min: result.Seconds(200 * time.Microsecond), P50: result.Seconds(250 * time.Microsecond), P99: result.Seconds(time.Millisecond),
		Max: result.Seconds(2 * time.Millisecond)}
	rr.RR = &result.RR{RoundTrips: 100, Duration: result.Seconds(time.Second), Rate: 100, Latency: lat}
	iv := result.NewInterval("rr", 0, time.Second)
	iv.RoundTrips, iv.RTT = 100, &lat
	doc := result.NewReport("doctor", "db2:7447", tool, at)
	doc.Doctor = &result.Doctor{Steps: []result.DoctorStep{
		{Name: "net rr", Area: "network", Status: result.StepRan, Report: rr, Intervals: []result.Interval{iv}},
		{Name: "disk local", Area: "storage", Status: result.StepSkipped, Why: "no --disk-path"},
	}, Verdicts: []result.Finding{{Code: "x.y", Severity: "warning", Summary: "a <b>verdict</b> & its words"}}}

	for _, c := range []struct {
		name    string
		records []any
		want    []string
	}{
		{"rr.jsonl", []any{iv, rr}, []string{`id="s1-chart-rtt"`, "sockperf ping-pong -i db2 --tcp -m 0"}},
		{"doctor.jsonl", []any{doc}, []string{`id="s1-chart-rtt"`, "a &lt;b&gt;verdict&lt;/b&gt; &amp; its words", "no --disk-path", `id="area-storage"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			saved := savedRun(t, dir, c.name, c.records...)
			out := filepath.Join(dir, c.name+".html")
			stdout, stderr, code := run(t, nil, "report", saved, "--html", out)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "wrote "+out) {
				t.Errorf("stdout: %q", stdout)
			}
			page, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(page), w) {
					t.Errorf("no %q in the page", w)
				}
			}
		})
	}
	// Without --html, beside the run.
	saved := filepath.Join(dir, "rr.jsonl")
	if _, stderr, code := run(t, nil, "report", "--html", "", saved); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "rr.html")); err != nil {
		t.Errorf("no report beside the run: %v", err)
	}
}

// TestReportBadInput: one line, exit 2.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "notes.txt")
	os.WriteFile(notJSON, []byte("hello\n"), 0o644)
	noSummary := savedRun(t, dir, "ivs.jsonl", result.NewInterval("rr", 0, time.Second))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "name a saved run"},
		{[]string{"report", filepath.Join(dir, "missing.jsonl")}, "no such file"},
		{[]string{"report", notJSON}, "line 1 is not a narrows JSON record"},
		{[]string{"report", noSummary}, "no summary record"},
		{[]string{"report", noSummary, noSummary}, "unexpected argument"},
		{[]string{"report", "--pdf", "x"}, "flag provided but not defined"},
	} {
		_, stderr, code := run(t, nil, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want exit 2, one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// TestHTMLFlag: a command given --html writes the report beside its
// usual output, the same page `narrows report` makes from its JSON lines.
func TestHTMLFlag(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "plan.html")
	stdout, stderr, code := run(t, nil, "plan", "backup", "--json", "--assume", "network=1Gbit/s", "--assume", "disk=500MB/s",
		"--compression", "none", "--size", "1TB", "--rto", "1h", "--html", page)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `class="backup-table"`) {
		t.Errorf("no backup table in the page")
	}
	saved := filepath.Join(dir, "plan.jsonl")
	os.WriteFile(saved, []byte(stdout), 0o644)
	again := filepath.Join(dir, "again.html")
	if _, stderr, code := run(t, nil, "report", saved, "--html", again); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(again); string(b) != string(got) {
		t.Errorf("the page from the saved run differs from the page the run wrote")
	}
}

// TestReportCheck: `narrows report --check` holds a saved run to the
// report invariants: a line per one broken and exit 1, else a line that
// says what was checked and exit 0; bad input is one line, exit 2.
func TestReportCheck(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	stream := func(closing float64) []any {
		rep := result.NewReport("net stream", "db2:7447", result.Tool{Version: "0.1.0", Protocol: 1}, at)
		rep.Facts = &result.Facts{OS: "linux", Interfaces: []result.NIC{{Name: "eth0", SpeedMbps: 1000}}}
		rep.Stream = &result.Stream{Throughput: 940e6, Runs: []result.StreamRun{{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: 940e6}}}
		rep.Findings = []result.Finding{{Code: "stream.single_stream_capacity", Severity: "info", Summary: "One stream (forward) carried 940 Mbit/s."}}
		a := result.NewInterval("stream", 0, 5*time.Second)
		a.Direction, a.Throughput = "forward", 940e6
		b := result.NewInterval("stream", 5*time.Second, 5*time.Second+400*time.Microsecond)
		b.Direction, b.Throughput = "forward", closing
		return []any{a, b, rep}
	}
	clean := savedRun(t, dir, "clean.jsonl", stream(900e6)...)
	stdout, stderr, code := run(t, nil, "report", clean, "--check")
	if code != 0 || stdout != "no invariant broken: 1 finding, 2 intervals\n" {
		t.Errorf("clean run: exit %d, %q %q", code, stdout, stderr)
	}
	broken := savedRun(t, dir, "broken.jsonl", stream(2.62e9)...)
	stdout, stderr, code = run(t, map[string]string{"NARROWS_CHECK_INVARIANTS": "0"}, "report", "--check", broken)
	if code != 1 || strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(stdout, "rate_above_path: interval forward 5.00-5.00 s reads 2.62 Gbit/s") ||
		!strings.Contains(stderr, "1 invariant broken") {
		t.Errorf("broken run: exit %d, %q %q", code, stdout, stderr)
	}
	if _, stderr, code := run(t, nil, "report", "--check", filepath.Join(dir, "missing.jsonl")); code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("missing run: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run(t, nil, "report", "--check", clean, "--html", filepath.Join(dir, "x.html")); code != 2 || !strings.Contains(stderr, "--check writes no HTML") {
		t.Errorf("--check with --html: exit %d, %q", code, stderr)
	}
}
