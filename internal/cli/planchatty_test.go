package cli_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
)

// chattyPlan runs plan chatty --json and returns its plan and its output.
func chattyPlan(t *testing.T, env map[string]string, args ...string) (map[string]any, string) {
	t.Helper()
	return planOf(t, env, "chatty", "chatty_plan", args...)
}

// chattyCase is the plan's case of that name (and round trip, for "rtt").
func chattyCase(t *testing.T, plan map[string]any, name string, rtt float64) map[string]any {
	t.Helper()
	for _, c := range plan["cases"].([]any) {
		m := c.(map[string]any)
		if r, _ := itest.Num(m, "rtt_seconds"); m["case"] == name && (name != "rtt" || math.Abs(r-rtt) < 1e-9) {
			return m
		}
	}
	t.Fatalf("no case %s in %v", name, plan["cases"])
	return nil
}

func approx(t *testing.T, what string, m map[string]any, key string, want float64) {
	t.Helper()
	got, ok := itest.Num(m, key)
	if !ok || math.Abs(got-want) > 1e-6*math.Max(1, want) {
		t.Errorf("%s %s = %v, want %v", what, key, m[key], want)
	}
}

// saveJSON writes a report as a saved run's summary line.
func saveJSON(t *testing.T, rep *result.Report) string {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPlanChattyAssumed: the example from figures given by hand,
// with the JSON names it asks for (units in them), the table in words,
// and a saved plan planned again with another round trip.
func TestPlanChattyAssumed(t *testing.T) {
	plan, stdout := chattyPlan(t, nil, "--queries", "5000", "--assume", "rtt=420us,server=100us", "--rtt", "200us")
	now := chattyCase(t, plan, "now", 0)
	for _, k := range []string{"wire_seconds", "total_seconds", "queries_per_second", "per_query_seconds", "server_and_client_seconds", "wire_share_ratio"} {
		if _, ok := now[k]; !ok {
			t.Errorf("the now case lacks %q: %v", k, now)
		}
	}
	approx(t, "now", now, "wire_seconds", 2.1)
	approx(t, "now", now, "total_seconds", 2.6)
	approx(t, "at 200 µs", chattyCase(t, plan, "rtt", 200e-6), "total_seconds", 1.5)
	approx(t, "plan", plan, "most_saved_seconds", 2.0)

	out, _, code := run(t, nil, "plan", "chatty", "--queries", "5000", "--assume", "rtt=420us", "--assume", "server=100us")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"5,000 queries wait 2.10 s on the wire of 2.60 s (81%)", "next to the database", "what if rtt 200 µs",
		"Bandwidth cannot help", "field report 002", "network round trip              420 µs  assumed"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	// Saved, then asked across 10 ms with 3 round trips a query: the
	// figures and the 5,000 queries carry over.
	saved := filepath.Join(t.TempDir(), "plan.jsonl")
	os.WriteFile(saved, []byte(stdout), 0o644)
	plan, _ = chattyPlan(t, nil, "--from", saved, "--rtt", "10ms", "--round-trips-per-query", "3")
	approx(t, "from the saved plan", plan, "queries", 5000)
	approx(t, "now, 3 round trips", chattyCase(t, plan, "now", 0), "total_seconds", 5000*(3*420e-6+100e-6))
	approx(t, "at 10 ms, 3 round trips", chattyCase(t, plan, "rtt", 10e-3), "total_seconds", 5000*(3*10e-3+100e-6))
	approx(t, "1 round trip", chattyCase(t, plan, "one_round_trip", 0), "total_seconds", 2.6)
}

// TestPlanChattyFromSavedRuns: a saved net rr gives the network alone (the
// server's time not known until given), a saved db ping its split with
// both bounds.
func TestPlanChattyFromSavedRuns(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rr := result.NewReport("net rr", "db1:7447", result.Tool{}, start)
	rr.RR = &result.RR{RoundTrips: 5000, Latency: result.Latency{Mean: result.Seconds(2 * time.Millisecond), P50: result.Seconds(2 * time.Millisecond)},
		Config: result.RRConfig{RequestBytes: 64, ResponseBytes: 64}}
	path := saveJSON(t, rr)
	plan, _ := chattyPlan(t, nil, "--from", path, "--queries", "1000")
	now := chattyCase(t, plan, "now", 0)
	approx(t, "net rr", now, "total_seconds", 2)
	if _, ok := now["server_and_client_seconds"]; ok {
		t.Errorf("net rr knows nothing of the server: %v", now)
	}
	if from := itest.Obj(plan, "figures")["network_rtt_from"].(string); !strings.Contains(from, "net rr to db1:7447 (saved in "+path+")") {
		t.Errorf("network from %q", from)
	}
	// The server's time given by hand joins the figures read.
	plan, _ = chattyPlan(t, nil, "--from", path, "--queries", "1000", "--assume", "server=500us")
	approx(t, "net rr + server", chattyCase(t, plan, "now", 0), "total_seconds", 2.5)

	ping := result.NewReport("db ping", "postgres://narrows@db1/postgres", result.Tool{}, start)
	ping.DBPing = &result.DBPing{Queries: 2000, Latency: result.Latency{Mean: result.Seconds(2500 * time.Microsecond), P50: result.Seconds(2400 * time.Microsecond)},
		Config: result.DBPingConfig{Query: "SELECT '<500 characters>'", PayloadBytes: 500},
		Network: &result.NetworkSplit{Method: "bounds", LowFrom: "tcp_handshake_rtt", HighFrom: "empty_query", TCPConnectSamples: 5, EmptyRoundTrips: 200,
			NetworkLow: result.Seconds(2 * time.Millisecond), NetworkHigh: result.Seconds(2200 * time.Microsecond)}}
	path = saveJSON(t, ping)
	plan, _ = chattyPlan(t, nil, "--from", path, "--queries", "1000", "--rtt", "200us")
	f := itest.Obj(plan, "figures")
	approx(t, "db ping", f, "network_rtt_seconds", 2e-3)
	approx(t, "db ping", f, "network_rtt_high_seconds", 2.2e-3)
	// The split is the medians': the query's p50 (2.4 ms) less the
	// network's; the mean's 0.1 ms of tail is no one's.
	approx(t, "db ping", f, "server_and_client_seconds", 0.4e-3)
	approx(t, "db ping", f, "request_bytes", 514)
	approx(t, "now", chattyCase(t, plan, "now", 0), "total_seconds", 2.4)
	at := chattyCase(t, plan, "rtt", 200e-6)
	// The rest at another network is the middle of its bounds: 400 µs
	// with the network at 2 ms, 200 µs at 2.2 ms.
	approx(t, "at 200 µs", at, "total_seconds", 1000*(200e-6+300e-6))
	// A shorter path than the one measured: its low end is the wire
	// alone (the rest read after a longer idle may shrink), its high end
	// the rest kept whole.
	approx(t, "at 200 µs, the wire alone", at, "total_low_seconds", 1000*200e-6)
	approx(t, "at 200 µs, the rest whole", at, "total_high_seconds", 1000*(200e-6+400e-6))
}

// TestPlanChattyBadInput: every mistake is one line naming what is wrong
// and what to do, exit 2, before anything is measured.
func TestPlanChattyBadInput(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte("not json\n"), 0o644)
	other := saveJSON(t, result.NewReport("disk", "/data", result.Tool{}, time.Now()))
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no figures", nil, nil, "give the figures: measure them (--dsn DSN"},
		{"no queries", nil, []string{"--assume", "rtt=1ms", "--queries", "0"}, "--queries 0: must be at least 1"},
		{"round trips", nil, []string{"--assume", "rtt=1ms", "--round-trips-per-query", "0"}, "--round-trips-per-query 0: use 1 to 100"},
		{"too many round trips", nil, []string{"--assume", "rtt=1ms", "--round-trips-per-query", "101"}, "use 1 to 100"},
		{"a zero rtt", nil, []string{"--assume", "rtt=1ms", "--rtt", "0"}, "--rtt 0: must be more than zero"},
		{"a bare rtt", nil, []string{"--assume", "rtt=1ms", "--rtt", "200"}, `invalid duration "200": give a unit`},
		{"a list with a bad rtt", nil, []string{"--assume", "rtt=1ms", "--rtt", "200us,fast"}, `invalid duration "fast"`},
		{"unknown figure", nil, []string{"--assume", "latency=1ms"}, `unknown name "latency": use rtt, server, floor, request, response`},
		{"no value", nil, []string{"--assume", "rtt"}, "use NAME=VALUE, several separated by commas, e.g. rtt=2ms,server=150us"},
		{"a bad duration", nil, []string{"--assume", "rtt=soon"}, "rtt=soon: give a time above zero and at most an hour, e.g. rtt=2ms"},
		{"a bad size", nil, []string{"--assume", "rtt=1ms,request=big"}, "request=big: give bytes from 1 to 1 GiB"},
		{"no rtt", nil, []string{"--assume", "server=1ms"}, "no network round trip to plan from: give it, e.g. --assume rtt=2ms"},
		{"payload offline", nil, []string{"--assume", "rtt=1ms", "--request", "500"}, "--request is the query measured"},
		{"from and dsn", nil, []string{"--from", garbage, "--dsn", "postgres://narrows@db1/postgres"}, "--from and --dsn/--to"},
		{"from nowhere", nil, []string{"--from", filepath.Join(dir, "nothing.jsonl")}, "--from: open " + filepath.Join(dir, "nothing.jsonl") + ": no such file"},
		{"from garbage", nil, []string{"--from", garbage}, "line 1 is not a narrows JSON record"},
		{"from another run", nil, []string{"--from", other}, "no net rr, db ping or plan chatty summary in it"},
		{"bad dsn", nil, []string{"--dsn", "oracle://db1"}, "plan chatty: --dsn:"},
		{"bad NARROWS_DSN", map[string]string{"NARROWS_DSN": "oracle://db1"}, nil, "plan chatty: NARROWS_DSN:"},
		{"bad agent port", map[string]string{"NARROWS_SECRET": itest.Secret}, []string{"--to", "127.0.0.1:99999"}, `invalid port "99999"`},
		{"bad duration", nil, []string{"--dsn", "postgres://narrows@db1/postgres", "--duration", "0"}, "--duration"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, c.env, append([]string{"plan", "chatty"}, c.args...)...)
			if code != cli.ExitUsage || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, stdout, stderr, c.want)
			}
		})
	}
}

// TestPlanChattyAgent: --to a real agent on loopback measures net rr
// (the network alone) and plans from it, saying so on stderr; that run,
// saved, plans again offline.
func TestPlanChattyAgent(t *testing.T) {
	a := itest.StartAgent(t, nil)
	env := map[string]string{"NARROWS_SECRET": itest.Secret}
	stdout, stderr, code := run(t, env, "plan", "chatty", "--to", a.Addr, "--duration", "1s", "--queries", "1000", "--payload", "500", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "step 1 of 1: the network's round trips through the agent (net rr, 500 B / 64 B each way, 1s)") {
		t.Errorf("progress: %q", stderr)
	}
	_, sum := itest.Records(t, stdout)
	if sum["agent_software"] == "" || sum["target"] != a.Addr {
		t.Errorf("summary: target %v, agent %v", sum["target"], sum["agent_software"])
	}
	plan := itest.Obj(sum, "chatty_plan")
	f := itest.Obj(plan, "figures")
	rtt, _ := itest.Num(f, "network_rtt_seconds")
	if rtt <= 0 || rtt > 0.01 || !strings.Contains(f["network_rtt_from"].(string), "net rr through the agent at "+a.Addr) {
		t.Fatalf("figures: %v", f)
	}
	approx(t, "request", f, "request_bytes", 500)
	approx(t, "now", chattyCase(t, plan, "now", 0), "wire_seconds", 1000*rtt)
	saved := filepath.Join(t.TempDir(), "rr.jsonl")
	os.WriteFile(saved, []byte(stdout), 0o644)
	again, _ := chattyPlan(t, nil, "--from", saved, "--rtt", "1ms")
	approx(t, "at 1 ms", chattyCase(t, again, "rtt", 1e-3), "wire_seconds", 1)
}
