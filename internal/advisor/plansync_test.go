package advisor

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

func fig(d time.Duration) *result.Figure {
	return &result.Figure{Seconds: result.Seconds(d), Source: "assumed"}
}

func TestPlanSyncEngines(t *testing.T) {
	ms := time.Millisecond
	us := time.Microsecond
	cases := []struct {
		name  string
		parts result.SyncParts
		// engine → added, predicted commit latency (seconds); -1: not predicted
		want map[string][2]float64
	}{
		{"parts composed: PostgreSQL waits after its flush, SQL Server overlaps it",
			result.SyncParts{CommitNow: fig(900 * us), LocalFlush: fig(150 * us), RTT: fig(10 * ms), RemoteFlush: fig(200 * us), RemoteWrite: fig(20 * us)},
			map[string][2]float64{
				result.SyncPostgres:     {0.0102, 0.0111},
				"postgres_remote_write": {0.01002, 0.01092},
				result.SyncSQLServer:    {0.01005, 0.01095}, // 10.2 ms − the 150 µs flush it overlaps
				result.SyncMySQL:        {0.01002, 0.01092},
			}},
		{"a whole acknowledgement measured is used instead of its parts",
			result.SyncParts{CommitNow: fig(1 * ms), LocalFlush: fig(1 * ms), RTT: fig(10 * ms), RemoteFlush: fig(200 * us),
				RemoteCommit: fig(11 * ms), RemoteReceipt: fig(10500 * us)},
			map[string][2]float64{
				result.SyncPostgres:  {0.011, 0.012},
				result.SyncSQLServer: {0.010, 0.011},
				result.SyncMySQL:     {0.0105, 0.0115},
			}},
		{"a slow local disk hides a near replica from SQL Server only",
			result.SyncParts{CommitNow: fig(6 * ms), LocalFlush: fig(5 * ms), RTT: fig(200 * us), RemoteFlush: fig(300 * us), RemoteWrite: fig(20 * us)},
			map[string][2]float64{
				result.SyncPostgres:  {0.0005, 0.0065},
				result.SyncSQLServer: {0, 0.006},
				result.SyncMySQL:     {0.00022, 0.00622},
			}},
		{"no commit today: the local flush stands for it",
			result.SyncParts{LocalFlush: fig(100 * us), RTT: fig(1 * ms), RemoteFlush: fig(100 * us)},
			map[string][2]float64{
				result.SyncPostgres:  {0.0011, 0.0012},
				result.SyncSQLServer: {0.001, 0.0011},
				result.SyncMySQL:     {-1, -1}, // no replica's write
			}},
		{"no local flush: SQL Server cannot be told",
			result.SyncParts{RTT: fig(1 * ms), RemoteFlush: fig(100 * us), RemoteWrite: fig(10 * us)},
			map[string][2]float64{
				result.SyncPostgres:  {0.0011, 0.0011},
				result.SyncSQLServer: {-1, -1},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanSync(SyncInput{Parts: c.parts})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Engines) != 4 {
				t.Fatalf("%d engines, want 4 (PostgreSQL on and remote_write, SQL Server, MySQL)", len(p.Engines))
			}
			for _, e := range p.Engines {
				w, ok := c.want[e.Engine]
				if !ok {
					continue
				}
				if w[0] < 0 {
					if len(e.Missing) == 0 || e.PredictedCommitLatencySeconds != 0 {
						t.Errorf("%s: predicted %v with parts missing", e.Engine, e.PredictedCommitLatencySeconds)
					}
					continue
				}
				if len(e.Missing) > 0 {
					t.Errorf("%s: missing %v", e.Engine, e.Missing)
					continue
				}
				if math.Abs(e.AddedSeconds-w[0]) > 1e-9 || math.Abs(e.PredictedCommitLatencySeconds-w[1]) > 1e-9 {
					t.Errorf("%s: adds %v, commit %v; want %v, %v", e.Engine, e.AddedSeconds, e.PredictedCommitLatencySeconds, w[0], w[1])
				}
				if math.Abs(e.PredictedCommitsPerSecond*e.PredictedCommitLatencySeconds-1) > 1e-9 {
					t.Errorf("%s: %v commits/s at %v s each", e.Engine, e.PredictedCommitsPerSecond, e.PredictedCommitLatencySeconds)
				}
			}
		})
	}
}

func TestPlanSyncOperation(t *testing.T) {
	tp := &result.Rate{BytesPerSecond: 10e6, Source: "assumed"}
	cases := []struct {
		log                       int64
		alone                     time.Duration
		ship, sync, worst, behind float64
		behindBytes               int64
		limitedBy                 string
	}{
		// The field case: 7 GB that takes 9 s alone, across 10 MB/s.
		{7e9, 9 * time.Second, 700, 700, 709, 691, 7e9 - 9e7, "log shipping"},
		// Little log: the operation itself sets the pace, nothing is behind.
		{1e7, 5 * time.Second, 1, 5, 6, 0, 0, "the operation itself"},
	}
	for _, c := range cases {
		p, err := PlanSync(SyncInput{Parts: result.SyncParts{Throughput: tp}, Engines: []string{result.SyncPostgres}, OpLog: c.log, OpTime: c.alone})
		if err != nil {
			t.Fatal(err)
		}
		op := p.Operation
		if op == nil {
			t.Fatal("no operation planned")
		}
		for _, x := range []struct {
			name      string
			got, want float64
		}{{"ship", op.ShipSeconds, c.ship}, {"sync", op.SyncSeconds, c.sync}, {"at worst", op.SyncAtWorstSeconds, c.worst},
			{"async", op.AsyncSeconds, c.alone.Seconds()}, {"behind", op.AsyncBehindSeconds, c.behind}} {
			if math.Abs(x.got-x.want) > 1e-6 {
				t.Errorf("%d B in %s: %s %v s, want %v", c.log, c.alone, x.name, x.got, x.want)
			}
		}
		if op.AsyncBehindBytes != c.behindBytes || op.LimitedBy != c.limitedBy {
			t.Errorf("%d B in %s: behind %d B, limited by %q; want %d, %q", c.log, c.alone, op.AsyncBehindBytes, op.LimitedBy, c.behindBytes, c.limitedBy)
		}
	}
}

func TestPlanSyncRefuses(t *testing.T) {
	if _, err := PlanSync(SyncInput{}); err == nil {
		t.Error("a plan with no part at all was made")
	}
	_, err := PlanSync(SyncInput{Parts: result.SyncParts{RTT: fig(time.Millisecond)}, OpLog: 1e9, OpTime: time.Second})
	if err == nil || !strings.Contains(err.Error(), "throughput") {
		t.Errorf("an operation without the log's crossing rate: %v", err)
	}
	if _, err := PlanSync(SyncInput{Parts: result.SyncParts{RTT: fig(time.Millisecond)}, Engines: []string{"oracle"}}); err == nil {
		t.Error("an unknown engine was planned")
	}
}

func TestSyncFindings(t *testing.T) {
	p, err := PlanSync(SyncInput{Parts: result.SyncParts{CommitNow: fig(800 * time.Microsecond), RTT: fig(10 * time.Millisecond),
		RemoteFlush: fig(200 * time.Microsecond)}, Engines: []string{result.SyncPostgres}})
	if err != nil {
		t.Fatal(err)
	}
	fs := syncPlan(&p)
	if len(fs) != 1 {
		t.Fatalf("findings %+v, want one (remote_write is not predicted without the replica's write)", fs)
	}
	want := "PostgreSQL (on): a synchronous replica adds 10.2 ms to each commit, 11.0 ms instead of 800 µs; one session makes 91 commits a second instead of 1,250."
	if fs[0].Summary != want {
		t.Errorf("finding\n %s\nwant\n %s", fs[0].Summary, want)
	}
}

// TestSyncFlushDisagreement: when net commit's flush on the agent and the
// disk test's on the same filesystem disagree (the field case: one slow
// stretch made net commit's median 12.2 ms while the disk test read
// 125 µs), the engines that wait for the replica's flush are not
// predicted, a warning says so and withdraws commit.split; the engines
// that wait for its write only are still predicted. Two measures that
// agree within the bounds change nothing.
func TestSyncFlushDisagreement(t *testing.T) {
	us, ms := time.Microsecond, time.Millisecond
	base := result.SyncParts{CommitNow: fig(900 * us), LocalFlush: fig(150 * us), RTT: fig(30 * ms),
		RemoteCommit: fig(42 * ms), RemoteReceipt: fig(30100 * us), RemoteWrite: fig(20 * us)}
	for _, c := range []struct {
		name         string
		flush, check time.Duration
		disagree     bool
	}{
		{"the field case", 12200 * us, 125 * us, true},
		{"the other way round", 125 * us, 12200 * us, true},
		{"within a factor of two", 180 * us, 125 * us, false},
		{"after an idle, as a VM wakes (456 µs against 162 µs)", 456 * us, 162 * us, false},
		{"after an idle, ten times slower", 1700 * us, 162 * us, true},
		{"twice, but both fast", 60 * us, 140 * us, false},
		{"a slow disk read alike twice", 9 * ms, 7 * ms, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := base
			ps.RemoteFlush, ps.RemoteFlushCheck = fig(c.flush), fig(c.check)
			p, err := PlanSync(SyncInput{Parts: ps})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Engines {
				waitsForFlush := e.Engine == result.SyncPostgres || e.Engine == result.SyncSQLServer
				predicted := e.PredictedCommitLatencySeconds > 0 && len(e.Missing) == 0
				if predicted == (waitsForFlush && c.disagree) {
					t.Errorf("%s: predicted %v (missing %v) with the flushes %v and %v", e.Engine, predicted, e.Missing, c.flush, c.check)
				}
			}
			fs := syncPlan(&p)
			var warned bool
			for _, f := range fs {
				if f.Code == "plan.sync_flush_disagree" {
					warned = true
					if !strings.HasPrefix(f.Summary, "Cannot judge") || !strings.Contains(f.Summary, metric.FormatDuration(c.flush)) || !strings.Contains(f.Summary, metric.FormatDuration(c.check)) {
						t.Errorf("the warning does not name both figures: %s", f.Summary)
					}
				}
			}
			if warned != c.disagree {
				t.Errorf("warned %v, want %v: %+v", warned, c.disagree, fs)
			}
			if Withdrawn(fs)["commit.split"] != c.disagree {
				t.Errorf("commit.split withdrawn %v, want %v", Withdrawn(fs)["commit.split"], c.disagree)
			}
		})
	}
}

// TestSyncFlushIsNotACommit: without a commit today the local flush is
// the floor of the commit, said as a flush, not as the commit today.
func TestSyncFlushIsNotACommit(t *testing.T) {
	p, err := PlanSync(SyncInput{Parts: result.SyncParts{LocalFlush: fig(190 * time.Microsecond), RemoteCommit: fig(1690 * time.Microsecond)},
		Engines: []string{result.SyncPostgres}})
	if err != nil {
		t.Fatal(err)
	}
	fs := syncPlan(&p)
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	want := "PostgreSQL (on): a synchronous replica adds 1.69 ms to each commit; with the local log flush (190 µs) a commit takes at least 1.88 ms, its statement's own time not measured (--dsn measures it); one session then makes at most 532 commits a second."
	if fs[0].Summary != want {
		t.Errorf("finding\n %s\nwant\n %s", fs[0].Summary, want)
	}
}
