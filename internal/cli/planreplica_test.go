package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
)

// replicaPlan runs plan replica --json and returns its replica_plan and
// its whole output.
func replicaPlan(t *testing.T, env map[string]string, args ...string) (map[string]any, string) {
	t.Helper()
	return planOf(t, env, "replica", "replica_plan", args...)
}

func firstCase(t *testing.T, p map[string]any) map[string]any {
	t.Helper()
	cs, _ := p["cases"].([]any)
	if len(cs) == 0 {
		t.Fatalf("no cases: %v", p)
	}
	return cs[0].(map[string]any)
}

func jnum(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := itest.Num(m, k)
	if !ok {
		t.Fatalf("no %s in %v", k, m)
	}
	return v
}

// TestPlanReplicaOffline: a plan from figures given by hand (the testbed's
// experiment 2: one stream window-bound at 1.92 MB/s across 40 ms, 5 MB/s
// of log) with the JSON the issue names; then re-planned from the saved run
// with another load and at 80 ms.
func TestPlanReplicaOffline(t *testing.T) {
	p, stdout := replicaPlan(t, nil, "--assume", "stream=1.92MB/s,rtt=40ms,window=81920", "--log-rate", "5MB/s")
	c := firstCase(t, p)
	if p["verdict"] != "falls_behind" || c["verdict"] != "falls_behind" {
		t.Fatalf("verdict %v / %v, want falls_behind", p["verdict"], c["verdict"])
	}
	for k, want := range map[string]float64{"send_queue_growth_bytes_per_second": 3.08e6, "headroom_at_peak_ratio": 0.384,
		"headroom_at_mean_ratio": 0.384, "rpo_bytes": 3.08e6 * 600, "rpo_seconds": 3.08e6 * 600 / 5e6} {
		if got := jnum(t, c, k); got < want*0.999 || got > want*1.001 {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if c["catch_up_never"] != true {
		t.Errorf("catch-up %v, want never", c)
	}
	if s := itest.Obj(p, "stream"); s["limited_by"] != "window" || s["source"] != "assumed" {
		t.Errorf("stream %v: the window was inferred from rate × RTT against the window", s)
	}
	w := itest.Obj(p, "window")
	// No buffer was given: nothing is known to raise, so no command, only
	// how to read each setting and what to run if it is below.
	tuning, _ := w["tuning"].([]any)
	if jnum(t, w, "bdp_bytes") != 200000 || len(tuning) != 3 {
		t.Fatalf("window %v", w)
	}
	for _, x := range tuning {
		if m := x.(map[string]any); m["status"] != "unknown" || m["command"] != nil || m["check"] == nil {
			t.Errorf("tuning %v: not known, so a check and no command", m)
		}
	}
	saved := filepath.Join(t.TempDir(), "plan.jsonl")
	if err := os.WriteFile(saved, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same stream, half the load with peaks of 3 MB/s, and a DR site at 80 ms.
	p, _ = replicaPlan(t, nil, "--from", saved, "--log-rate", "1MB/s,3MB/s", "--rtt", "80ms", "--peak", "5m")
	c = firstCase(t, p)
	if p["verdict"] != "falls_behind_at_peak" || jnum(t, c, "send_queue_growth_bytes_per_second") != 1.08e6 ||
		jnum(t, c, "rpo_bytes") != 1.08e6*300 || jnum(t, c, "catch_up_seconds") != 1.08e6*300/0.92e6 {
		t.Fatalf("re-planned: %v %v", p["verdict"], c)
	}
	ws := p["what_ifs"].([]any)
	rtt := ws[0].(map[string]any)
	if rtt["what"] != "rtt 80.0 ms" || jnum(t, rtt, "capacity_bytes_per_second") != 1.024e6 || rtt["limited_by"] != "window" {
		t.Fatalf("the 80 ms what-if: %v", rtt)
	}
	if f := rtt["bounds"].([]any)[0].(map[string]any)["formula"].(string); !strings.Contains(f, "window ÷ RTT = 81,920 B ÷ 80.0 ms = 1.02 MB/s") {
		t.Errorf("formula %q", f)
	}
	if dbl := ws[1].(map[string]any); jnum(t, dbl, "log_factor") != 2 || dbl["verdict"] != "falls_behind" {
		t.Errorf("the doubled log: %v", dbl)
	}
	// The table says the same in words.
	out, _, _ := run(t, nil, "plan", "replica", "--from", saved, "--log-rate", "1MB/s,3MB/s", "--rtt", "80ms")
	for _, want := range []string{"FALLS BEHIND AT PEAK", "1.08 MB/s", "rtt 80.0 ms: one stream 1.02 MB/s, limited by its window",
		"cannot judge: run sysctl net.ipv4.tcp_rmem", "cannot judge: run netsh interface tcp show global", "autotuninglevel=normal", "What it means:"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanReplicaFromStream: plan replica --from a saved `net stream
// --json` takes the stream as the verdicts read it (window-bound here),
// the agent's buffer maxima with it; SQL Server's databases each get a
// stream and their sum is set against the N streams' link.
func TestPlanReplicaFromStream(t *testing.T) {
	tcp := &result.TCPSummary{RTT: result.Seconds(20300 * time.Microsecond), MinRTT: result.Seconds(20100 * time.Microsecond), MSSBytes: 1448,
		SndWndBytes: 81920, RwndLimited: 0.8, BDPBytes: 79000}
	rep := result.NewReport("net stream", "b:7447", result.Tool{}, time.Unix(0, 0))
	rep.Stream = &result.Stream{Throughput: 31.2e6, Runs: []result.StreamRun{
		{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: 31.2e6, TCP: tcp},
		{Phase: result.PhaseParallel, Direction: "forward", Streams: 4, Throughput: 120e6},
	}, Buffers: &result.StreamBuffers{AgentRmemMax: 131072, ClientWmemMax: 4 << 20, AgentOS: "linux"}}
	b, _ := json.Marshal(rep)
	saved := filepath.Join(t.TempDir(), "stream.jsonl")
	os.WriteFile(saved, append(b, '\n'), 0o644)

	p, _ := replicaPlan(t, nil, "--from", saved, "--log-rate", "Sales=3MB/s,3.5MB/s", "--log-rate", "HR=1MB/s,2MB/s", "--rtt", "80ms")
	s := itest.Obj(p, "stream")
	if jnum(t, s, "capacity_bytes_per_second") != 3.9e6 || s["limited_by"] != "window" || jnum(t, s, "receiver_tcp_rmem_max_bytes") != 131072 ||
		jnum(t, s, "link_bytes_per_second") != 15e6 || !strings.Contains(s["source"].(string), saved) {
		t.Fatalf("stream %v", s)
	}
	if cs := p["cases"].([]any); len(cs) != 2 || cs[0].(map[string]any)["database"] != "Sales" || cs[1].(map[string]any)["verdict"] != "keeps_up" {
		t.Fatalf("cases %v", cs)
	}
	if l := itest.Obj(p, "link"); jnum(t, l, "log_peak_bytes_per_second") != 5.5e6 || jnum(t, l, "capacity_bytes_per_second") != 15e6 || l["verdict"] != "keeps_up" {
		t.Fatalf("link %v", l)
	}
	rtt := p["what_ifs"].([]any)[0].(map[string]any)
	if jnum(t, rtt, "capacity_bytes_per_second") != 1.024e6 || rtt["verdict"] != "falls_behind" {
		t.Fatalf("at 80 ms: %v", rtt)
	}
	if w := itest.Obj(p, "window"); w["receiver_enough"] != false {
		t.Errorf("128 KiB on the replica's host for 3.5 MB/s × 20 ms: %v", w)
	}
}

// TestPlanReplicaBadInput: one line, exit 2, before anything is measured.
func TestPlanReplicaBadInput(t *testing.T) {
	noPlan := filepath.Join(t.TempDir(), "other.jsonl")
	os.WriteFile(noPlan, []byte(`{"schema":"narrows/v1","type":"summary","command":"disk","findings":[]}`+"\n"), 0o644)
	notJSON := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(notJSON, []byte("hello\n"), 0o644)
	stream := "--assume=stream=2MB/s,rtt=40ms"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no log rate", []string{stream}, "give the log rate"},
		{"no stream", []string{"--log-rate", "5MB/s"}, "give one stream's capacity"},
		{"bad rate", []string{stream, "--log-rate", "fast"}, `--log-rate "fast"`},
		{"peak below mean", []string{stream, "--log-rate", "5MB/s,2MB/s"}, "below the mean"},
		{"named and unnamed", []string{stream, "--log-rate", "Sales=5MB/s", "--log-rate", "2MB/s"}, "name every database"},
		{"twice", []string{stream, "--log-rate", "Sales=5MB/s", "--log-rate", "Sales=2MB/s"}, "given twice"},
		{"unknown assume", []string{"--assume", "stream=2MB/s,speed=3", "--log-rate", "1MB/s"}, "unknown name"},
		{"bad assume", []string{"--assume", "stream", "--log-rate", "1MB/s"}, "use NAME=VALUE"},
		{"bad limit", []string{"--assume", "stream=2MB/s,limit=moon", "--log-rate", "1MB/s"}, "use window, link, loss, cpu"},
		{"bad loss", []string{"--assume", "stream=2MB/s,loss=150%", "--log-rate", "1MB/s"}, "below 100%"},
		{"bad window", []string{"--assume", "stream=2MB/s,window=lots", "--log-rate", "1MB/s"}, "window=lots: give bytes"},
		{"peak without log", []string{"--assume", "stream=2MB/s,peak=3MB/s"}, "goes with log="},
		{"watch without dsn", []string{stream, "--log-rate", "1MB/s", "--watch", "10s"}, "give --dsn too"},
		{"streams without to", []string{stream, "--log-rate", "1MB/s", "--streams", "8"}, "give --to AGENT too"},
		{"bad rtt", []string{stream, "--log-rate", "1MB/s", "--rtt", "0s"}, "--rtt"},
		{"bad peak", []string{stream, "--log-rate", "1MB/s", "--peak", "soon"}, "--peak"},
		{"bad factor", []string{stream, "--log-rate", "1MB/s", "--log-factor", "-1"}, "--log-factor"},
		{"bad dsn", []string{stream, "--dsn", "oracle://x"}, "--dsn"},
		{"short watch", []string{stream, "--dsn", "postgres://u@127.0.0.1:1/x", "--watch", "1s"}, "at least 2s"},
		{"missing file", []string{"--from", filepath.Join(t.TempDir(), "none"), "--log-rate", "1MB/s"}, "--from"},
		{"not json", []string{"--from", notJSON, "--log-rate", "1MB/s"}, "not a narrows JSON record"},
		{"no stream in file", []string{"--from", noPlan, "--log-rate", "1MB/s"}, "no stream and no replica plan"},
		{"bad streams", []string{"--to", "127.0.0.1:1", "--log-rate", "1MB/s", "--streams", "0"}, "--streams 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, nil, append([]string{"plan", "replica"}, c.args...)...)
			if code != cli.ExitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, stdout, stderr, c.want)
			}
		})
	}
}

// TestPlanReplicaMeasured: plan replica --to a real agent measures one
// stream then N (steps on stderr), reads the agent's buffer maxima, and
// plans the log given; on loopback it says no network was crossed.
func TestPlanReplicaMeasured(t *testing.T) {
	a := itest.StartAgent(t, nil)
	r := itest.Run(t, time.Minute, nil, "plan", "replica", "--to", a.Addr, "--stage-duration", "1s", "--streams", "2", "--log-rate", "5MB/s,8MB/s", "--rtt", "80ms", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "step 1 of 1: one stream to the agent, then 2") {
		t.Errorf("progress: %s", r.Stderr)
	}
	ended := time.Now()
	_, sum := itest.Records(t, r.Stdout)
	// started_at is when the plan started, before its two 1 s stages,
	// not when it wrote its plan after them (issue 27).
	if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(sum["started_at"])); err != nil || ended.Sub(at) < 2*time.Second {
		t.Errorf("started_at %v, %v before the run ended: want its start, 2 s of stages or more before its end (%v)", sum["started_at"], ended.Sub(at), err)
	}
	p := itest.Obj(sum, "replica_plan")
	s := itest.Obj(p, "stream")
	if c, _ := itest.Num(s, "capacity_bytes_per_second"); c <= 0 || s["same_host"] != true || s["limited_by"] == "" || s["source"] != "measured" {
		t.Fatalf("stream %v", s)
	}
	if l, _ := itest.Num(s, "link_bytes_per_second"); l <= 0 {
		t.Errorf("the 2 streams were not measured: %v", s)
	}
	if _, err := os.Stat("/proc/sys/net/ipv4/tcp_rmem"); err == nil {
		if v, _ := itest.Num(s, "receiver_tcp_rmem_max_bytes"); v <= 0 {
			t.Errorf("the agent did not tell its tcp_rmem maximum: %v", s)
		}
	}
	if w := p["what_ifs"].([]any); len(w) != 2 {
		t.Errorf("what-ifs %v", w)
	}
	notes, _ := json.Marshal(p["notes"])
	if !strings.Contains(string(notes), "agent ran on this machine") {
		t.Errorf("notes %s", notes)
	}
}
