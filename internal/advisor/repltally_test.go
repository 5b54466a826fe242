package advisor

import (
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestSilenceHasOneStart: on a busy machine a poll ends late; the
// silence's start (the poll's end less how long the replica was not
// heard from) and the silent verdict's first second are one figure, not
// two 0.05 s and more apart (TestReplStandbyOutage: both printed "from
// 5.0 s" and differed by more). A silence older than the run keeps the
// verdict's start at the run's.
func TestSilenceHasOneStart(t *testing.T) {
	at := func(v float64) result.Seconds { return result.Seconds(v * float64(time.Second)) }
	secs := func(v float64) *result.Seconds { s := at(v); return &s }
	poll := func(start, end float64, silentFor *result.Seconds) result.Interval {
		st := result.ReplicaState{Name: "dr1", State: result.ReplicaStreaming, VerdictCode: result.VerdictKeepingUp}
		if silentFor != nil {
			st.State, st.VerdictCode, st.SilentFor = result.ReplicaSilent, result.VerdictSilent, silentFor
		}
		return result.Interval{Start: at(start), End: at(end), Repl: &result.ReplPoll{Replicas: []result.ReplicaState{st}}}
	}
	var tl ReplTally
	tl.Add(poll(4, 5, nil))
	tl.Add(poll(5, 6.3, secs(1.25)))   // heard last at 5.05; this poll ran 0.3 s late
	tl.Add(poll(6.3, 7.2, secs(2.18))) // 5.02 by this poll's clock
	tl.Add(poll(7.2, 8.2, secs(3.12))) // 5.08: the old start, at − dt of the first silent poll, is 5.0
	rr := tl.Run().Replicas[0]
	var first *result.Seconds
	for _, v := range rr.Verdicts {
		if v.Verdict == result.VerdictSilent {
			first = &v.First
		}
	}
	if first == nil || rr.LongestSilenceStart == nil {
		t.Fatalf("no silence told: %+v", rr)
	}
	if *first != *rr.LongestSilenceStart || *first != at(5.05) {
		t.Errorf("silent from %v, the silence from %v: want both 5.05 s", *first, *rr.LongestSilenceStart)
	}

	var before ReplTally
	before.Add(poll(0, 1, secs(42)))
	rr = before.Run().Replicas[0]
	if v := rr.Verdicts[0]; v.First != 0 || *rr.LongestSilenceStart != at(-41) {
		t.Errorf("a silence 41 s older than the run: verdict from %v, silence from %v; want 0 and -41", v.First, *rr.LongestSilenceStart)
	}
}
