package words

import (
	"slices"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

// Answer is one of the questions a DBA brings to doctor, answered by the
// finding of doctor's verdicts that answers it (the most severe, when
// several do), or, when none does, by what the steps that would answer
// it say: not asked (and what to give) or cannot judge (and why).
type Answer struct {
	Question string          // "Will the replica keep up?"
	Finding  *result.Finding // nil: Else says why there is no answer
	Else     string
}

// question is an Answer's question: the steps whose findings answer it,
// and the codes among their findings that do.
type question struct {
	q     string
	steps []string
	codes []string // a code, or a prefix ending in "."
}

// questions are issue 27's, in its order: the replica, the synchronous
// replica, the backup, the chatty session, the disk, the path; and
// issue 28's, the hosts, before the path.
var questions = []question{
	{"Will the replica keep up, and what is the RPO at the peak?", []string{"plan replica", "db repl"},
		[]string{"plan.replica_" + result.VerdictFallsBehind, "plan.replica_" + result.VerdictFallsBehindAtPeak, "plan.replica_link_" + result.VerdictFallsBehind,
			"plan.replica_link_" + result.VerdictFallsBehindAtPeak, "plan.replica_cannot_judge", "plan.replica_" + result.VerdictKeepsUp,
			"repl." + result.VerdictSendQueue, "repl." + result.VerdictDisk, "repl." + result.VerdictReplay, "repl." + result.VerdictSilent,
			"repl." + result.VerdictCatchingUp, "repl.run", "repl.no_replicas", "repl." + result.VerdictKeepingUp}},
	{"What does a synchronous replica cost each commit?", []string{"plan sync", "net commit"},
		[]string{"plan.sync_flush_disagree", "plan.sync_commit", "commit.split"}},
	{"How long do the backup and the restore take?", []string{"plan backup"},
		[]string{"plan.rto_missed", "plan.backup_cannot_judge", "plan.backup_largest"}},
	{"How much of a chatty session is the wire?", []string{"plan chatty", "db ping", "net rr 64 B"},
		[]string{"plan.chatty_wire", "plan.chatty_most_saved"}},
	{"Is it the disk?", []string{"disk data path", "disk log path", "disk on the agent"},
		[]string{"disk.memory_backed", "disk.cpu_limited", "disk.log_tail", "disk.log_flush_fast", "disk.small_test_file", "disk.log_commit_floor", "disk.data_random_reads"}},
	{"What on these hosts should change?", []string{"host", "net stream", "net stream reverse"},
		[]string{"host.cpu_wakeups", "stream.packet_core_limited", "host.cpu_wakeups_unjudged", "host.cpu_wakeups_none"}},
	{"Is anything on the path broken (MTU, loss, a deep queue under load)?", []string{"net mtu", "net rr under load", "net stream"},
		[]string{"mtu.nothing_passes", "mtu.black_hole", "mtu.mismatch", "rr.bufferbloat", "rr.under_load_tail", "stream.loss_limited", "mtu.ok", "rr.under_load_ok", "rr.under_load_unfilled"}},
}

// Answers are the questions' answers, in order, from doctor's Report:
// each the verdict whose code comes first in its question's codes (they
// list what is wrong before what is well), else why none: a step that
// failed (cannot judge) before one that was skipped (not asked).
func Answers(rep *result.Report) []Answer {
	d := rep.Doctor
	if d == nil {
		return nil
	}
	var out []Answer
	for _, q := range questions {
		a := Answer{Question: q.q, Finding: first(q.codes, d.Verdicts)}
		if a.Finding == nil {
			a.Else = why(d, q.steps)
		}
		out = append(out, a)
	}
	return out
}

// why is the answer of a question no finding answered: the first of its
// steps that failed, else the first that was skipped, in their words;
// else that they ran and said nothing to it.
func why(d *result.Doctor, steps []string) string {
	var skipped, ran []string
	for _, name := range steps {
		for _, s := range d.Steps {
			if s.Name != name {
				continue
			}
			switch s.Status {
			case result.StepFailed:
				return "cannot judge: " + s.Name + " failed: " + s.Why
			case result.StepSkipped:
				skipped = append(skipped, s.Name+" skipped: "+s.Why)
			default:
				ran = append(ran, s.Name)
			}
		}
	}
	if len(ran) > 0 {
		// A step not asked is said too: the answer's other steps may be
		// the ones that would have told (the hosts' experiment beside
		// the streams).
		s := "no finding: " + strings.Join(ran, ", ") + " said nothing to it (the findings below)"
		if len(skipped) > 0 {
			s += "; not asked: " + skipped[0]
		}
		return s
	}
	if len(skipped) > 0 {
		return "not asked: " + skipped[0]
	}
	return "not asked"
}

// first is the finding of fs whose code comes first in codes (a question
// lists what is wrong before what is well), nil when none has one.
func first(codes []string, fs []result.Finding) *result.Finding {
	var out *result.Finding
	best := len(codes)
	for i := range fs {
		if k := slices.Index(codes, fs[i].Code); k >= 0 && k < best {
			out, best = &fs[i], k
		}
	}
	return out
}
