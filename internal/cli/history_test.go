package cli_test

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/result"
)

func historyRuns(t *testing.T, dir string) []map[string]any {
	t.Helper()
	r := itest.Run(t, 30*time.Second, []string{"NARROWS_HISTORY=" + dir}, "history", "--json", "--limit", "0")
	if r.Code != 0 {
		t.Fatalf("history: exit %d: %s", r.Code, r.Stderr)
	}
	var runs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, m)
	}
	return runs
}

// TestHistoryKeepsRunsOfConcurrentProcesses: two narrows at once, both kept;
// --no-history and NARROWS_NO_HISTORY keep nothing.
func TestHistoryKeepsRunsOfConcurrentProcesses(t *testing.T) {
	a := itest.StartAgent(t, nil)
	dir := t.TempDir()
	env := []string{"NARROWS_HISTORY=" + dir}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := itest.Run(t, 30*time.Second, env, "net", "rr", "--to", a.Addr, "--duration", "500ms", "--interval", "100ms", "--json")
			if r.Code != 0 || strings.Contains(r.Stderr, "history not kept") {
				t.Errorf("exit %d: %s", r.Code, r.Stderr)
			}
		}()
	}
	wg.Wait()
	itest.Run(t, 30*time.Second, env, "net", "rr", "--to", a.Addr, "--duration", "200ms", "--no-history")
	itest.Run(t, 30*time.Second, append(env, "NARROWS_NO_HISTORY=1"), "net", "rr", "--to", a.Addr, "--duration", "200ms")
	runs := historyRuns(t, dir)
	if len(runs) != 2 {
		t.Fatalf("%d runs kept, want 2: %v", len(runs), runs)
	}
	for _, r := range runs {
		if r["command"] != "net rr" || r["target"] != a.Addr || r["headline"].(float64) <= 0 {
			t.Errorf("kept %v", r)
		}
	}
	table := itest.Run(t, 30*time.Second, env, "history")
	if !strings.Contains(table.Stdout, "net rr") || !strings.Contains(table.Stdout, "round trips") {
		t.Errorf("history table:\n%s", table.Stdout)
	}
}

// TestHistorySurvivesKillMidWrite: a narrows killed with SIGKILL inside
// its transaction leaves a store that opens and holds every earlier run.
func TestHistorySurvivesKillMidWrite(t *testing.T) {
	a := itest.StartAgent(t, nil)
	dir := t.TempDir()
	env := []string{"NARROWS_HISTORY=" + dir}
	for i := 0; i < 2; i++ {
		if r := itest.Run(t, 30*time.Second, env, "net", "rr", "--to", a.Addr, "--duration", "200ms"); r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
	}
	cmd := exec.Command(itest.Binary(t), "net", "rr", "--to", a.Addr, "--duration", "200ms")
	cmd.Env = append(os.Environ(), "NARROWS_SECRET="+itest.Secret, "NARROWS_HISTORY="+dir, "NARROWS_NO_HISTORY=", "NARROWS_HISTORY_TEST_STALL=1m")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	stalled := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "stalling") {
			stalled = true
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !stalled {
		t.Fatal("the run never reached the transaction")
	}
	if runs := historyRuns(t, dir); len(runs) != 2 {
		t.Fatalf("%d runs after the kill, want the 2 earlier ones", len(runs))
	}
	if r := itest.Run(t, 30*time.Second, env, "net", "rr", "--to", a.Addr, "--duration", "200ms"); r.Code != 0 || r.Stderr != "" {
		t.Fatalf("after the kill: exit %d: %s", r.Code, r.Stderr)
	}
	if runs := historyRuns(t, dir); len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
}

// TestHistoryCorruptAndNewerStores: history and compare refuse with words
// and exit 2; a measuring run still succeeds and says the run was not
// kept; the file is byte for byte untouched.
func TestHistoryCorruptAndNewerStores(t *testing.T) {
	a := itest.StartAgent(t, nil)
	corrupt := t.TempDir()
	os.WriteFile(filepath.Join(corrupt, "history.db"), bytes.Repeat([]byte("garbage!"), 1000), 0o600)
	newer := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(newer, "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE future (x); PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, c := range []struct{ dir, want string }{{corrupt, "cannot be read"}, {newer, "schema version 99"}} {
		path := filepath.Join(c.dir, "history.db")
		before, _ := os.ReadFile(path)
		env := []string{"NARROWS_HISTORY=" + c.dir}
		for _, args := range [][]string{{"history"}, {"compare", "1", "2"}} {
			r := itest.Run(t, 30*time.Second, env, args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, c.want) || !strings.Contains(r.Stderr, path) || !strings.Contains(r.Stderr, "nothing was changed") {
				t.Errorf("%v on %s: exit %d: %s", args, c.want, r.Code, r.Stderr)
			}
		}
		r := itest.Run(t, 30*time.Second, env, "net", "rr", "--to", a.Addr, "--duration", "200ms")
		if r.Code != 0 || !strings.HasPrefix(r.Stderr, "narrows: history not kept: ") {
			t.Errorf("a run on %s: exit %d: %s", c.want, r.Code, r.Stderr)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("%s: the store was changed", c.want)
		}
	}
}

// TestCompareRealRuns: 64-byte against 1 MiB requests on loopback is a
// change the test finds; two runs paced alike (--rate) are "~".
func TestCompareRealRuns(t *testing.T) {
	t.Parallel() // it waits on a whole doctor or plan run, and holds what ran, not how fast
	a := itest.StartAgent(t, nil)
	dir := t.TempDir()
	env := []string{"NARROWS_HISTORY=" + dir}
	rr := func(args ...string) {
		full := append([]string{"net", "rr", "--to", a.Addr, "--duration", "2s", "--interval", "200ms"}, args...)
		if r := itest.Run(t, 60*time.Second, env, full...); r.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
		}
	}
	rr("--request", "64")
	rr("--request", "1M")
	rr("--rate", "200")
	rr("--rate", "200")
	type fig struct {
		Name        string   `json:"name"`
		Significant bool     `json:"significant"`
		P           *float64 `json:"p_value"`
	}
	compare := func(x, y string) (figs map[string]fig, warnings []string, text string) {
		r := itest.Run(t, 30*time.Second, env, "compare", "--json", x, y)
		if r.Code != 0 {
			t.Fatalf("compare: exit %d: %s", r.Code, r.Stderr)
		}
		var c struct {
			Warnings []string `json:"warnings"`
			Figures  []fig    `json:"figures"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &c); err != nil {
			t.Fatal(err)
		}
		figs = map[string]fig{}
		for _, f := range c.Figures {
			figs[f.Name] = f
		}
		return figs, c.Warnings, itest.Run(t, 30*time.Second, env, "compare", x, y).Stdout
	}
	figs, warnings, text := compare("1", "2")
	t.Logf("64 B against 1 MiB:\n%s", text)
	if f := figs["round trip p50"]; !f.Significant || f.P == nil {
		t.Errorf("64 B against 1 MiB requests: round trip p50 %+v", f)
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "settings rr.request_bytes: 64 → 1048576") {
		t.Errorf("no warning of the request size: %v", warnings)
	}
	figs, _, text = compare("3", "4")
	t.Logf("paced alike:\n%s", text)
	if f := figs["round trips"]; f.Significant || f.P == nil {
		t.Errorf("two runs paced alike: round trips %+v", f)
	}
}

// TestCompareSaysWhatChanged: compare says first the verdicts that
// changed (new, gone, now of another severity), and a figure it has too
// few samples to test is shown with its change, marked untested, not
// called noise (issue 27: net commit 22.2 → 31.3 ms read "~").
func TestCompareSaysWhatChanged(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, p50 time.Duration, fs ...result.Finding) string {
		rep := result.NewReport("net rr", "db2:7447", result.Tool{Version: "1.0"}, time.Date(2026, 11, 1, 2, 3, 4, 0, time.UTC))
		rep.RR = &result.RR{RoundTrips: 100, Rate: 1000}
		rep.RR.P50 = result.Seconds(p50)
		rep.Findings = fs
		var b bytes.Buffer
		if err := jsonl.New(&b).Report(rep); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		os.WriteFile(path, b.Bytes(), 0o644)
		return path
	}
	f := func(code, sev, summary string) result.Finding {
		return result.Finding{Code: code, Severity: sev, Summary: summary}
	}
	before := write("before.jsonl", 22200*time.Microsecond, f("rr.wire_time", "info", "5,000 queries wait 111 s"), f("rr.under_load_ok", "info", "no deep queue"),
		f("rr.tail", "info", "a tail"))
	after := write("after.jsonl", 31300*time.Microsecond, f("rr.wire_time", "info", "5,000 queries wait 156 s"), f("rr.bufferbloat", "warning", "a queue builds under load"),
		f("rr.tail", "warning", "a long tail"))
	r := itest.Run(t, 30*time.Second, nil, "compare", before, after)
	if r.Code != 0 {
		t.Fatalf("compare: exit %d: %s", r.Code, r.Stderr)
	}
	t.Logf("\n%s", r.Stdout)
	for _, want := range []string{"Verdicts that changed:\n  new   ! a queue builds under load\n  now a warning (was info): a long tail\n  gone  • no deep queue\n",
		"+41.0%?", "too few samples to test"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("compare does not say %q", want)
		}
	}
	if strings.Index(r.Stdout, "Verdicts that changed") > strings.Index(r.Stdout, "FIGURE") {
		t.Error("the verdicts come after the figures")
	}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "round trip p50") && strings.Contains(line, " ~ ") {
			t.Errorf("an untested change called noise: %q", line)
		}
	}
}
