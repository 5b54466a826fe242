package cli_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
)

// syncPlan runs plan sync --json and returns its plan.
func syncPlan(t *testing.T, args ...string) (map[string]any, string) {
	t.Helper()
	return planOf(t, nil, "sync", "sync_plan", args...)
}

// syncEngine is one engine's row of a plan.
func syncEngine(t *testing.T, p map[string]any, engine string) map[string]any {
	t.Helper()
	for _, e := range p["engines"].([]any) {
		if m := e.(map[string]any); m["engine"] == engine {
			return m
		}
	}
	t.Fatalf("no engine %q in %v", engine, p["engines"])
	return nil
}

// TestPlanSyncOffline: experiment 5's parts given by hand predict its
// commit (0.9 ms today + 10.3 ms round trip + 150 µs flush on the standby
// = 11.35 ms) with the JSON the issue names; the field report's rebuild
// (7 GB, 9 s alone) across 117 MB/s; a saved plan re-plans with one part
// changed (a DR site farther away).
func TestPlanSyncOffline(t *testing.T) {
	p, stdout := syncPlan(t, "--assume", "commit=0.9ms", "--assume", "local-flush=150us", "--assume", "rtt=10.3ms",
		"--assume", "remote-flush=150us", "--assume", "remote-write=30us", "--assume", "throughput=117MB/s", "--op-log", "7GB", "--op-time", "9s")
	pg := syncEngine(t, p, "postgres")
	if got := pg["predicted_commit_latency_seconds"].(float64); math.Abs(got-0.01135) > 1e-9 {
		t.Errorf("PostgreSQL commit %v s, want 0.01135", got)
	}
	if got := pg["predicted_commits_per_second"].(float64); math.Abs(got-1/0.01135) > 1e-6 {
		t.Errorf("PostgreSQL commits/s %v, want %v", got, 1/0.01135)
	}
	ss := syncEngine(t, p, "sqlserver")
	if got := ss["added_commit_latency_seconds"].(float64); math.Abs(got-0.0103) > 1e-9 {
		t.Errorf("SQL Server adds %v s, want 10.45 − 0.15 = 10.3 ms", got)
	}
	op := p["operation"].(map[string]any)
	if s := op["predicted_sync_seconds"].(float64); math.Abs(s-7e9/117e6) > 1e-6 || op["limited_by"] != "log shipping" {
		t.Errorf("7 GB across 117 MB/s: %v s limited by %v, want %.1f s by log shipping", s, op["limited_by"], 7e9/117e6)
	}
	saved := filepath.Join(t.TempDir(), "sync.jsonl")
	if err := os.WriteFile(saved, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ = syncPlan(t, "--from", saved, "--assume", "rtt=80ms", "--engine", "postgres")
	pg = syncEngine(t, p, "postgres")
	if got := pg["predicted_commit_latency_seconds"].(float64); math.Abs(got-0.08105) > 1e-9 {
		t.Errorf("re-planned at 80 ms: commit %v s, want 0.9 + 80 + 0.15 ms", got)
	}
	parts := p["parts"].(map[string]any)
	if src := parts["commit_now"].(map[string]any)["source"]; src != "measured ("+saved+")" {
		t.Errorf("a saved part's source is %v", src)
	}
	// The table says it in words.
	out, _, _ := run(t, nil, "plan", "sync", "--from", saved, "--assume", "rtt=80ms")
	for _, want := range []string{"PostgreSQL (on)", "81.0 ms", "synchronous_commit = on", "SQL Server"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanSyncFromMeasuredRuns: saved runs of `net rr` (a real agent) and
// `disk` (a real file, the log profile) feed a plan: the round trip and
// the local flush are theirs (the profile's 8 KiB write + fdatasync, the
// size the plan measures with --log-path: PostgreSQL's WAL page).
func TestPlanSyncFromMeasuredRuns(t *testing.T) {
	a := itest.StartAgent(t, nil)
	dir := t.TempDir()
	rr := itest.Run(t, time.Minute, nil, "net", "rr", "--to", a.Addr, "--duration", "1s", "--json")
	dk := itest.Run(t, time.Minute, nil, "disk", "--path", dir, "--profile", "log", "--duration", "300ms", "--size", "16M", "--json")
	if rr.Code != 0 || dk.Code != 0 {
		t.Fatalf("net rr exit %d: %s\ndisk exit %d: %s", rr.Code, rr.Stderr, dk.Code, dk.Stderr)
	}
	saved := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(saved, []byte(rr.Stdout+dk.Stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	_, rrSum := jsonLines(t, rr.Stdout)
	_, dkSum := jsonLines(t, dk.Stdout)
	p, _ := syncPlan(t, "--from", saved, "--assume", "remote-flush=200us")
	parts := p["parts"].(map[string]any)
	if got, want := num(t, parts, "rtt", "seconds"), num(t, rrSum, "rr", "rtt_p50_seconds"); got != want {
		t.Errorf("round trip %v, want net rr's p50 %v", got, want)
	}
	var flush float64
	for _, pat := range dkSum["disk"].(map[string]any)["patterns"].([]any) {
		m := pat.(map[string]any)
		if m["block_bytes"].(float64) == 8192 && m["sync"] == "fdatasync" {
			flush = m["latency_p50_seconds"].(float64)
		}
	}
	if flush <= 0 || num(t, parts, "local_flush", "seconds") != flush {
		t.Errorf("local flush %v, want the log profile's 8 KiB write + fdatasync p50 (PostgreSQL's WAL page) %v", parts["local_flush"], flush)
	}
	if w := parts["local_flush"].(map[string]any)["what"].(string); !strings.Contains(w, dir) || !strings.Contains(w, "8 KiB + fdatasync") {
		t.Errorf("local flush says %q", w)
	}
	pg := syncEngine(t, p, "postgres")
	if got, want := pg["predicted_commit_latency_seconds"].(float64), flush+num(t, rrSum, "rr", "rtt_p50_seconds")+200e-6; math.Abs(got-want) > 1e-9 {
		t.Errorf("commit %v, want flush + round trip + 200 µs = %v", got, want)
	}
}

// TestPlanSyncBadInput: each mistake is one line, exit 2.
func TestPlanSyncBadInput(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, []byte(`{"schema":"narrows/v1","type":"summary","command":"net stream"}`+"\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "give the parts"},
		{[]string{"--assume", "rtt"}, "use NAME=VALUE"},
		{[]string{"--assume", "rtt=fast"}, "rtt=fast: give a time"},
		{[]string{"--assume", "jitter=1ms"}, `unknown name "jitter"`},
		{[]string{"--assume", "throughput=lots"}, "--assume"},
		{[]string{"--assume", "rtt=1ms", "--engine", "oracle"}, "--engine"},
		{[]string{"--assume", "rtt=1ms", "--op-log", "7GB"}, "--op-time"},
		{[]string{"--assume", "rtt=1ms", "--op-log", "7GB", "--op-time", "9s"}, "throughput"},
		{[]string{"--assume", "rtt=1ms", "--op-log", "lots", "--op-time", "9s"}, "--op-log"},
		{[]string{"--from", "/nonexistent/runs.jsonl"}, "--from"},
		{[]string{"--from", empty}, "nothing a sync plan uses"},
		{[]string{"--assume", "rtt=1ms", "--remote-path", "/data"}, "--to"},
		{[]string{"--to", "127.0.0.1:1", "--in-flight", "1"}, "--in-flight"},
		{[]string{"--to", "127.0.0.1:1", "--block", "100"}, "--block"},
	} {
		_, stderr, code := run(t, nil, append([]string{"plan", "sync"}, c.args...)...)
		if code != cli.ExitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("plan sync %v: exit %d, %q; want exit 2, one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// TestPlanSyncMeasured: plan sync --to a real agent with a --disk-path and
// --log-path here measures every part — the local flush, round trips, log
// blocks acknowledged after the agent's write and after its flush, the
// throughput with blocks in flight — and composes each engine from them;
// the agent's directory is left empty. An agent that writes no files
// leaves the replica's side unknown, and the plan says so.
func TestPlanSyncMeasured(t *testing.T) {
	far, near := t.TempDir(), t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", far})
	r := itest.Run(t, 2*time.Minute, nil, "plan", "sync", "--to", a.Addr, "--log-path", near, "--stage-duration", "1s", "--disk-size", "16M",
		"--in-flight", "8", "--op-log", "100MB", "--op-time", "1s", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if n := strings.Count(r.Stderr, "narrows plan sync: step "); n != 5 || strings.Contains(r.Stderr, "not measured") {
		t.Errorf("stderr says %d steps, want 5, each measured:\n%s", n, r.Stderr)
	}
	_, sum := jsonLines(t, r.Stdout)
	p := sum["sync_plan"].(map[string]any)
	sec := func(part string) float64 { return num(t, p, "parts", part, "seconds") }
	local, rtt, write, flush, receipt, ack := sec("local_flush"), sec("rtt"), sec("remote_write"), sec("remote_flush"), sec("remote_receipt"), sec("remote_commit")
	tp := num(t, p, "parts", "throughput", "bytes_per_second")
	// What the agent timed of its own part lies inside the acknowledgement
	// the client timed; a flush includes its write.
	if !(local > 0 && rtt > 0 && write > 0 && flush >= write && receipt >= write && ack >= flush && tp > 0) {
		t.Fatalf("parts: local flush %v, rtt %v, remote write %v, write+flush %v, ack after write %v, after flush %v, throughput %v", local, rtt, write, flush, receipt, ack, tp)
	}
	pg := syncEngine(t, p, "postgres")
	if got := pg["predicted_commit_latency_seconds"].(float64); math.Abs(got-(local+ack)) > 1e-9 {
		t.Errorf("PostgreSQL: %v s, want the local flush (standing for the commit today) + the acknowledgement after a flush = %v", got, local+ack)
	}
	if got := num(t, p, "operation", "throughput_bytes_per_second"); got != tp {
		t.Errorf("the operation crossed at %v B/s, the measured throughput is %v", got, tp)
	}
	if left, _ := os.ReadDir(far); len(left) != 0 {
		t.Errorf("the agent's directory holds %d entries after the plan", len(left))
	}

	bare := itest.StartAgent(t, nil)
	r = itest.Run(t, time.Minute, nil, "plan", "sync", "--to", bare.Addr, "--stage-duration", "1s", "--engine", "postgres", "--json")
	if r.Code != 0 || !strings.Contains(r.Stderr, "start it with --disk-path") {
		t.Fatalf("against an agent without --disk-path: exit %d, %s", r.Code, r.Stderr)
	}
	_, sum = jsonLines(t, r.Stdout)
	pg = syncEngine(t, sum["sync_plan"].(map[string]any), "postgres")
	if m, _ := pg["missing"].([]any); len(m) == 0 || pg["predicted_commit_latency_seconds"] != nil && pg["predicted_commit_latency_seconds"].(float64) != 0 {
		t.Errorf("PostgreSQL predicted without the replica's flush: %v", pg)
	}
}

// TestPlanSyncTwoFlushes: a run with net commit and a disk test on the
// agent (as doctor's) gives the plan two measures of the replica's flush:
// net commit's, which its acknowledgement holds, and the disk test's 8 KiB
// write + fdatasync, held against it. On one quiet filesystem they agree,
// and the plan predicts from them without a warning.
func TestPlanSyncTwoFlushes(t *testing.T) {
	far := t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", far})
	nc := itest.Run(t, time.Minute, nil, "net", "commit", "--to", a.Addr, "--block", "1K", "--duration", "1s", "--json")
	dk := itest.Run(t, time.Minute, nil, "disk", "--on", a.Addr, "--path", far, "--profile", "log", "--duration", "300ms", "--size", "16M", "--json")
	if nc.Code != 0 || dk.Code != 0 {
		t.Fatalf("net commit exit %d: %s\ndisk --on exit %d: %s", nc.Code, nc.Stderr, dk.Code, dk.Stderr)
	}
	saved := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(saved, []byte(nc.Stdout+dk.Stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := syncPlan(t, "--from", saved, "--engine", "postgres", "--assume", "local-flush=150us")
	flush, check := num(t, p, "parts", "remote_flush", "seconds"), num(t, p, "parts", "remote_flush_check", "seconds")
	if w := p["parts"].(map[string]any)["remote_flush_check"].(map[string]any)["what"].(string); !strings.Contains(w, "8 KiB + fdatasync") {
		t.Errorf("the check says %q, want the disk test's 8 KiB write + fdatasync", w)
	}
	pg := syncEngine(t, p, "postgres")
	if m, _ := pg["missing"].([]any); len(m) != 0 || flush <= 0 || check <= 0 {
		t.Errorf("net commit's flush %v s and the disk test's %v s on one quiet filesystem: PostgreSQL missing %v", flush, check, m)
	}
}
