package words_test

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// TestAnswers: the six questions in issue 27's order; each answered by
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
		Verdicts: []result.Finding{f("repl.keeping_up", "info"), f("plan.replica_falls_behind_at_peak", "warning"), f("plan.sync_commit", "info"), f("mtu.ok", "info"), f("rr.bufferbloat", "warning")},
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
		{"Is it the disk", "no finding: disk on the agent said nothing to it (the findings below)"},
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
