package dbtest

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// TestPlanReplicaLogRate: plan replica --dsn reads the log rate of a real
// primary under `db load --rate 2MB/s` (PostgreSQL: pg_current_wal_lsn();
// MariaDB: the binary logs) within 15% of the load's own count, measures
// one stream to a real agent, and plans; it never shows the password.
func TestPlanReplicaLogRate(t *testing.T) {
	cases := []struct {
		engine, dsn string
		need        func(*testing.T)
	}{
		{"postgres", pgDSN(), needPG},
		{"mariadb", mySource(), needMaria},
	}
	a := itest.StartAgent(t, nil)
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			c.need(t)
			load := itest.Start(t, nil, "db", "load", "--dsn", c.dsn, "--rate", "2MB/s", "--duration", "9s", "--json")
			time.Sleep(1500 * time.Millisecond)
			r := itest.Run(t, time.Minute, nil, "plan", "replica", "--dsn", c.dsn, "--watch", "5s", "--to", a.Addr,
				"--stage-duration", "1s", "--streams", "1", "--rtt", "80ms", "--json")
			if code := load.Wait(t, 30*time.Second); code != 0 {
				t.Fatalf("db load exited %d: %s", code, load.Err.String())
			}
			noSecrets(t, "plan replica", r.Stdout, r.Stderr)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			for _, want := range []string{"step 1 of 2: the log on the primary", "every second for 5.00 s", "step 2 of 2: one stream to the agent"} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("progress lacks %q: %s", want, r.Stderr)
				}
			}
			livs, ls := itest.Records(t, load.Out.String())
			_, sum := itest.Records(t, r.Stdout)
			// The truth is what db load logged while plan replica watched
			// (its first 5 s, and a second for its connection): on a busy
			// machine db load falls behind its rate and makes it up, and
			// its whole run's mean is not the watch's.
			truth := loggedWithin(t, livs, ls, sum, 6*time.Second)
			p := itest.Obj(sum, "replica_plan")
			logs, _ := p["log"].([]any)
			if len(logs) != 1 {
				t.Fatalf("log %v, want one stream's", p["log"])
			}
			l := logs[0].(map[string]any)
			mean, _ := itest.Num(l, "mean_bytes_per_second")
			peak, _ := itest.Num(l, "peak_bytes_per_second")
			samples, _ := l["samples_bytes_per_second"].([]any)
			t.Logf("%s: plan replica read %.3f MB/s (peak %.3f, %d samples); db load held %.3f MB/s; %s", c.engine, mean/1e6, peak/1e6, len(samples), truth/1e6, l["what"])
			within(t, "the log rate plan replica read vs db load's own", mean, truth, 0.15)
			if peak < mean || len(samples) < 4 || len(samples) > 6 {
				t.Errorf("peak %v under mean %v, or %d samples for a 5 s watch", peak, mean, len(samples))
			}
			if p["engine"] != map[string]string{"postgres": "postgres", "mariadb": "mysql"}[c.engine] || l["source"] != "measured" {
				t.Errorf("engine %v, source %v", p["engine"], l["source"])
			}
			if s := itest.Obj(p, "stream"); s["source"] != "measured" {
				t.Errorf("stream %v", s)
			}
		})
	}
}

// loggedWithin is the log rate db load's intervals (ivs, its summary
// load) held over the first span of the run whose summary is run: their
// logged bytes over their time, for the intervals that began in it.
func loggedWithin(t *testing.T, ivs []map[string]any, load, run map[string]any, span time.Duration) float64 {
	t.Helper()
	at := func(m map[string]any) time.Time {
		s, _ := m["started_at"].(string)
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("started_at %q: %v", s, err)
		}
		return ts
	}
	from := at(run).Sub(at(load)).Seconds()
	var bytes, secs float64
	for _, iv := range ivs {
		st, _ := itest.Num(iv, "start_seconds")
		end, _ := itest.Num(iv, "end_seconds")
		b, ok := itest.Num(itest.Obj(iv, "load"), "log_bytes")
		if !ok || st < from || st >= from+span.Seconds() {
			continue
		}
		bytes, secs = bytes+b, secs+end-st
	}
	if secs < span.Seconds()/2 {
		t.Fatalf("db load's intervals cover %.1f s of plan replica's %v from %.1f s into the load", secs, span, from)
	}
	return bytes / secs
}

// TestPlanReplicaNotPrimary: a standby or a server without a binary log
// is named for what it is, exit 2.
func TestPlanReplicaNotPrimary(t *testing.T) {
	cases := []struct {
		engine, dsn, want string
		need              func(*testing.T)
	}{
		{"postgres standby", pgStandby(), "is a standby", needPG},
	}
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			c.need(t)
			r := itest.Run(t, time.Minute, nil, "plan", "replica", "--dsn", c.dsn, "--watch", "2s", "--assume", "stream=2MB/s,rtt=40ms")
			noSecrets(t, "plan replica", r.Stdout, r.Stderr)
			if r.Code != 2 || !strings.Contains(r.Stderr, c.want) {
				t.Fatalf("exit %d: %s; want 2 and %q", r.Code, r.Stderr, c.want)
			}
		})
	}
}

// TestPlanReplicaIdlePrimary: plan replica watching a real primary that
// writes (almost) nothing gives no verdict: it cannot judge, says what
// the primary wrote in how long and what to run instead; never "keeps up"
// and never a margin of "any". Before: `The replica keeps up: one stream
// carries 35.9 MB/s, any the peak of 0 B/s (any the mean).` The truth is
// the primary's own count of the log it wrote over the same watch.
func TestPlanReplicaIdlePrimary(t *testing.T) {
	cases := []struct {
		engine, dsn, super string
		need               func(*testing.T)
		position           string // the primary's log position, in bytes
	}{
		{"postgres", pgDSN(), pgSuper(), needPG, "SELECT pg_current_wal_lsn() - '0/0'"},
		{"mariadb", mySource(), "", needMaria, ""},
	}
	for _, c := range cases {
		t.Run(c.engine, func(t *testing.T) {
			c.need(t)
			var before int
			if c.position != "" {
				before = count(t, open(t, c.super), c.position)
			}
			r := itest.Run(t, time.Minute, nil, "plan", "replica", "--dsn", c.dsn, "--watch", "3s", "--assume", "stream=35.9MB/s", "--json")
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			if c.position != "" {
				wrote := count(t, open(t, c.super), c.position) - before
				t.Logf("the primary wrote %d B of WAL over the watch", wrote)
				if wrote >= 16000 {
					t.Fatalf("the primary wrote %d B over the watch: not idle, the test's premise fails", wrote)
				}
			}
			_, sum := itest.Records(t, r.Stdout)
			p := itest.Obj(sum, "replica_plan")
			if p["verdict"] != "cannot_judge" || !strings.HasPrefix(p["cannot_judge"].(string), "cannot judge: the primary wrote only ") {
				t.Errorf("verdict %v (%v), want cannot_judge", p["verdict"], p["cannot_judge"])
			}
			codes := findingCodes(sum)
			if len(codes) != 1 || codes[0] != "plan.replica_cannot_judge" {
				t.Errorf("findings %v, want plan.replica_cannot_judge alone", codes)
			}
			table := itest.Run(t, time.Minute, nil, "plan", "replica", "--dsn", c.dsn, "--watch", "3s", "--assume", "stream=35.9MB/s")
			if table.Code != 0 || !strings.Contains(table.Stdout, "Cannot judge: the primary wrote only ") ||
				strings.Contains(table.Stdout, "keeps up") || strings.Contains(table.Stdout, "any") {
				t.Errorf("exit %d, table:\n%s", table.Code, table.Stdout)
			}
			t.Log(table.Stdout)
		})
	}
}

// findingCodes are the codes of a summary's findings, in order.
func findingCodes(sum map[string]any) []string {
	var out []string
	fs, _ := sum["findings"].([]any)
	for _, f := range fs {
		if m, ok := f.(map[string]any); ok {
			out = append(out, m["code"].(string))
		}
	}
	return out
}
