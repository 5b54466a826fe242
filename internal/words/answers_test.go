package words_test

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// TestAnswers: issue 27's six questions in its order, with issue 28's
// (the hosts) before the path's; each answered by
// the verdict that comes first among its codes (what is wrong before
// what is well), whatever the verdicts' order; without one, a step that
// failed is "cannot judge" before one skipped is "not asked", and steps
// that ran and said nothing to it say so.
func TestAnswers(t *testing.T) {
	f := func(code, sev string) result.Finding { return result.Finding{Code: code, Severity: sev, Summary: code} }
	step := func(name, status, why string) result.DoctorStep {
		return result.DoctorStep{Name: name, Status: status, Why: why}
	}
	rep := result.NewReport("doctor", "db2:7447", result.Tool{}, time.Now())
	rep.Doctor = &result.Doctor{
		Verdicts: []result.Finding{f("repl.keeping_up", "info"), f("plan.replica_falls_behind_at_peak", "warning"), f("plan.sync_commit", "info"), f("mtu.ok", "info"), f("rr.bufferbloat", "warning"),
			f("host.cpu_wakeups_none", "info"), f("stream.packet_core_limited", "warning")},
		Steps: []result.DoctorStep{step("net stream", result.StepRan, ""), step("net mtu", result.StepRan, ""), step("net rr under load", result.StepRan, ""),
			step("net commit", result.StepRan, ""), step("db ping", result.StepFailed, "connect: refused"), step("db repl", result.StepRan, ""),
			step("disk data path", result.StepSkipped, "give --data-path"), step("disk log path", result.StepSkipped, "give --log-path"),
			step("disk on the agent", result.StepRan, ""), step("plan backup", result.StepSkipped, "give --data-path and --backup-path"),
			step("plan replica", result.StepRan, ""), step("plan sync", result.StepRan, ""), step("plan chatty", result.StepSkipped, "db ping measured no round trip"),
			step("net rr 64 B", result.StepRan, "")},
	}
	want := []struct{ q, answer string }{
		{"Will the replica keep up", "plan.replica_falls_behind_at_peak"},
		{"What does a synchronous replica cost", "plan.sync_commit"},
		{"How long do the backup", "not asked: plan backup skipped: give --data-path and --backup-path"},
		{"How much of a chatty session", "cannot judge: db ping failed: connect: refused"},
		{"Is it the disk", "no finding: disk on the agent said nothing to it (the findings below); not asked: disk data path skipped: give --data-path"},
		{"What on these hosts should change", "stream.packet_core_limited"},
		{"Is anything on the path broken", "rr.bufferbloat"},
	}
	got := words.Answers(rep)
	if len(got) != len(want) {
		t.Fatalf("%d answers, want %d", len(got), len(want))
	}
	for i, w := range want {
		a := got[i]
		answer := a.Else
		if a.Finding != nil {
			answer = a.Finding.Code
		}
		if !strings.HasPrefix(a.Question, w.q) || answer != w.answer {
			t.Errorf("answer %d: %q: %q; want %q: %q", i+1, a.Question, answer, w.q, w.answer)
		}
	}
}

// TestPathSummary: doctor's path in one line, each figure from its step,
// both hosts by name; a figure not measured is left out; the load's
// figures without a verdict of their own (the answers give it).
func TestPathSummary(t *testing.T) {
	rep := result.NewReport("doctor", "10.0.0.2:7447", result.Tool{}, time.Now())
	rep.Facts, rep.AgentFacts = &result.Facts{Hostname: "db1"}, &result.Facts{Hostname: "db2"}
	rr := &result.Report{RR: &result.RR{RoundTrips: 100}}
	rr.RR.P50 = result.Seconds(8100 * time.Microsecond)
	fwd := &result.Report{Stream: &result.Stream{Runs: []result.StreamRun{
		{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: 95e6, TCP: &result.TCPSummary{SteadyIntervals: 8, SteadyRetransRatio: 0.0002}},
		{Phase: result.PhaseParallel, Direction: "forward", Streams: 4, Throughput: 97e6}}}}
	rev := &result.Report{Stream: &result.Stream{Runs: []result.StreamRun{{Phase: result.PhaseSingle, Direction: "reverse", Streams: 1, Throughput: 94e6}}}}
	mtu := &result.Report{MTU: &result.MTU{Directions: []result.MTUDirection{{Direction: result.DirUp, PathMTU: 1500}, {Direction: result.DirDown, BlackHole: true}}}}
	load := &result.Report{Loaded: &result.Loaded{Rise: result.Seconds(12 * time.Millisecond)}}
	load.Loaded.Idle.RoundTrips, load.Loaded.Loaded.RoundTrips = 50, 50
	load.Loaded.Idle.P50, load.Loaded.Loaded.P50 = result.Seconds(8*time.Millisecond), result.Seconds(20*time.Millisecond)
	rep.Doctor = &result.Doctor{Steps: []result.DoctorStep{{Name: "net stream reverse", Report: rev}, {Name: "net stream", Report: fwd},
		{Name: "net rr 64 B", Report: rr}, {Name: "net mtu", Report: mtu}, {Name: "net rr under load", Report: load}}}
	want := "db1 → db2: round trip 8.10 ms (p50, 64 B); one stream 95 Mbit/s →, 94 Mbit/s ←; 4 streams 97 Mbit/s →; path MTU 1500 B →, a black hole ←; " +
		"one stream → sent 0.02% again in its steady state; median round trip 8.00 ms idle, 20.0 ms under load"
	if got := words.PathSummary(rep); got != want {
		t.Errorf("PathSummary:\n got %s\nwant %s", got, want)
	}
	load.Loaded.Rise, load.Loaded.Loaded.P50 = 0, load.Loaded.Idle.P50
	rep.Doctor.Steps = rep.Doctor.Steps[4:]
	if got, want := words.PathSummary(rep), "db1 → db2: median round trip 8.00 ms idle, 8.00 ms under load"; got != want {
		t.Errorf("PathSummary, the load alone:\n got %s\nwant %s", got, want)
	}
	rep.Doctor.Steps = nil
	if got := words.PathSummary(rep); got != "" {
		t.Errorf("PathSummary of nothing measured: %q", got)
	}
}
