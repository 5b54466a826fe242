package prom

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }

// scrape serves e's registry once and reads it, as Prometheus would.
func scrape(t *testing.T, e interface{ Registry() *prometheus.Registry }) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(e.Registry(), promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestMetrics(t *testing.T) {
	e := New(false)
	e.Update(&result.ReplPoll{At: time.Unix(0, 0), Engine: "postgres", LogBytes: i64(123456), GenerationRate: f64(5e6),
		PollTime: result.Seconds(2 * time.Millisecond),
		Replicas: []result.ReplicaState{{Name: "standby1", State: "streaming", Unsent: i64(0), Unwritten: i64(10), Unflushed: i64(20),
			Unreplayed: i64(3_000_000), SendRate: f64(5e6), ReplayRate: f64(0), RPOBytes: i64(0), VerdictCode: result.VerdictReplay}}},
		&result.ReplRun{Replicas: []result.ReplicaRun{{Name: "standby1", Verdicts: []result.VerdictTime{
			{Verdict: result.VerdictKeepingUp, Seconds: result.Seconds(8 * time.Second)}, {Verdict: result.VerdictReplay, Seconds: result.Seconds(4 * time.Second)}}}}})
	out := scrape(t, e)
	for _, want := range []string{
		`narrows_repl_up 1`,
		`narrows_repl_polls_total 1`,
		`narrows_repl_log_generation_bytes_per_second 5e+06`,
		`narrows_repl_queue_bytes{replica="standby1",stage="replay"} 3e+06`,
		`narrows_repl_queue_bytes{replica="standby1",stage="send"} 0`,
		`narrows_repl_stage_rate_bytes_per_second{replica="standby1",stage="send"} 5e+06`,
		`narrows_repl_verdict{replica="standby1",verdict="replay_bottleneck"} 1`,
		`narrows_repl_verdict{replica="standby1",verdict="keeping_up"} 0`,
		`narrows_repl_replica_up{replica="standby1"} 1`,
		`narrows_repl_rpo_bytes{replica="standby1"} 0`,
		// The run's time in each verdict, as the summary has it.
		`narrows_repl_verdict_seconds_total{replica="standby1",verdict="keeping_up"} 8`,
		`narrows_repl_verdict_seconds_total{replica="standby1",verdict="replay_bottleneck"} 4`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, "narrows_repl_") && !strings.HasPrefix(line, "# HELP narrows_repl_") && !strings.HasPrefix(line, "# TYPE narrows_repl_") {
			t.Errorf("a metric from outside this run's registry: %s", line)
		}
	}
	// A gap: no stale figures, only the gap.
	e.Update(&result.ReplPoll{Gap: &result.Gap{Of: "primary", Reason: "connection refused"}}, nil)
	out = scrape(t, e)
	if !strings.Contains(out, "narrows_repl_up 0") || !strings.Contains(out, "narrows_repl_poll_errors_total 1") || strings.Contains(out, "narrows_repl_queue_bytes") {
		t.Fatalf("during a gap:\n%s", out)
	}
	// A fresh exporter knows nothing of the last run.
	if out := scrape(t, New(false)); strings.Contains(out, "standby1") {
		t.Fatal("figures leaked between runs")
	}
}

// TestMetricsDatabaseLabel: only an engine with a log per database (SQL
// Server) has a database label, and never an empty one (issue 25,
// defect 12: database="" on every PostgreSQL series).
func TestMetricsDatabaseLabel(t *testing.T) {
	poll := func(engine, db string) *result.ReplPoll {
		return &result.ReplPoll{At: time.Unix(0, 0), Engine: engine, GenerationRate: f64(5e6),
			Replicas: []result.ReplicaState{{Name: "dr1", Database: db, State: "streaming", Unsent: i64(0), Generation: f64(1e6), VerdictCode: result.VerdictKeepingUp}}}
	}
	pg := New(false)
	pg.Update(poll("postgres", ""), nil)
	out := scrape(t, pg)
	if strings.Contains(out, "database=") || !strings.Contains(out, `narrows_repl_replica_up{replica="dr1"} 1`) || !strings.Contains(out, "narrows_repl_log_generation_bytes_per_second 5e+06") {
		t.Errorf("PostgreSQL:\n%s", out)
	}
	ss := New(true)
	ss.Update(poll("sqlserver", "sales"), nil)
	out = scrape(t, ss)
	if strings.Contains(out, `database=""`) || !strings.Contains(out, `narrows_repl_replica_up{database="sales",replica="dr1"} 1`) ||
		!strings.Contains(out, `narrows_repl_log_generation_bytes_per_second{database="sales"} 1e+06`) {
		t.Errorf("SQL Server:\n%s", out)
	}
}
