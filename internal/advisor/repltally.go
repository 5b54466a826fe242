package advisor

import (
	"slices"

	"github.com/narrows/narrows/internal/result"
)

// ReplTally sums up a db repl run poll by poll, once ReplPoll has judged
// each: the worst and mean queue of every stage, the generation peak, the
// longest silence, the worst RPO, and the time spent in each verdict (a
// poll's verdict standing for the interval that ends with it). The last
// poll says how a run ended; this says what happened in it.
type ReplTally struct {
	run    result.ReplRun
	reps   []*replicaTally
	genSum float64
	genN   int
}

type replicaTally struct {
	run   result.ReplicaRun
	stage [4]result.StageRun
	sum   [4]float64
	// verdicts, indexed as result.Verdicts; worst is the backlog (bytes,
	// or seconds of silence) of the poll whose words a verdict keeps.
	verdicts []result.VerdictTime
	worst    []float64
	// silentSince is when the silence the last poll told began (its
	// first poll's end less its silent-for), nil after a poll that heard
	// the replica: one start for the whole stretch, however late each
	// later poll ran.
	silentSince *result.Seconds
}

// Add counts one interval record of db repl.
func (t *ReplTally) Add(iv result.Interval) {
	p := iv.Repl
	if p == nil {
		return
	}
	dt := iv.End - iv.Start
	if p.Gap != nil {
		t.run.PrimaryUnreachable += dt
		return
	}
	var gen *float64
	for _, r := range p.Replicas {
		if g, ok := generation(&r, p.GenerationRate); ok && (gen == nil || g > *gen) {
			gen = &g
		}
	}
	if gen == nil {
		gen = p.GenerationRate
	}
	if g, ok := val(gen); ok {
		t.genSum += g
		t.genN++
		if pk, ok := val(t.run.PeakGeneration); !ok || g > pk {
			t.run.PeakGeneration = &g
		}
	}
	for i := range p.Replicas {
		t.replica(&p.Replicas[i], iv.End, dt)
	}
}

func (t *ReplTally) replica(st *result.ReplicaState, at, dt result.Seconds) {
	i := slices.IndexFunc(t.reps, func(r *replicaTally) bool { return r.run.Name == st.Name && r.run.Database == st.Database })
	if i < 0 {
		r := &replicaTally{run: result.ReplicaRun{Name: st.Name, Database: st.Database},
			verdicts: make([]result.VerdictTime, len(result.Verdicts)), worst: make([]float64, len(result.Verdicts))}
		for k, s := range []string{"send", "write", "flush", "replay"} {
			r.stage[k].Stage = s
		}
		t.reps = append(t.reps, r)
		i = len(t.reps) - 1
	}
	r := t.reps[i]
	r.run.Polls++
	var backlog float64
	for k, q := range []*int64{st.Unsent, st.Unwritten, st.Unflushed, st.Unreplayed} {
		v, ok := val(q)
		if !ok {
			continue
		}
		s := &r.stage[k]
		if s.Samples == 0 || v > s.Worst {
			s.Worst, s.WorstAt = v, at
		}
		s.Samples++
		r.sum[k] += float64(v)
		s.Mean = r.sum[k] / float64(s.Samples)
		backlog += float64(v)
	}
	if s, ok := val(st.SilentFor); ok {
		backlog = s.D().Seconds()
		if r.silentSince == nil {
			start := at - s
			r.silentSince = &start
		}
		if l, ok := val(r.run.LongestSilence); !ok || s > l {
			start := *r.silentSince
			r.run.LongestSilence, r.run.LongestSilenceStart = &s, &start
		}
	} else {
		r.silentSince = nil
	}
	if b, ok := val(st.RPOBytes); ok {
		if w, ok := val(r.run.WorstRPO); !ok || b > w {
			a := at
			r.run.WorstRPO, r.run.WorstRPOSeconds, r.run.WorstRPOAt = &b, st.RPOSeconds, &a
		}
	}
	if k := slices.Index(result.Verdicts, st.VerdictCode); k >= 0 {
		v := &r.verdicts[k]
		if v.Polls == 0 {
			// A poll's verdict stands for the interval that ends with it,
			// so the verdict began where that interval began: the same
			// clock as the silence's start (at − silent for), not one
			// interval later.
			v.Verdict, v.First = st.VerdictCode, at-dt
			if st.VerdictCode == result.VerdictSilent && r.silentSince != nil && *r.silentSince >= 0 {
				// A silence that began in the run: its own start, one
				// clock for both words (on a busy machine a late poll's
				// interval began 0.05 s and more from the silence's).
				// One older than the run is the silence's words alone
				// ("from 41 s before narrows started").
				v.First = *r.silentSince
			}
		}
		if v.Polls == 0 || backlog >= r.worst[k] {
			v.Worst, r.worst[k] = st.Verdict, backlog
		}
		v.Polls++
		v.Seconds += dt
	}
}

// Run is the run so far.
func (t *ReplTally) Run() *result.ReplRun {
	out := t.run
	if t.genN > 0 {
		m := t.genSum / float64(t.genN)
		out.MeanGeneration = &m
	}
	out.Replicas = []result.ReplicaRun{}
	for _, r := range t.reps {
		rr := r.run
		rr.Stages, rr.Verdicts = []result.StageRun{}, []result.VerdictTime{}
		for _, s := range r.stage {
			if s.Samples > 0 {
				rr.Stages = append(rr.Stages, s)
			}
		}
		for _, v := range r.verdicts {
			if v.Polls > 0 {
				rr.Verdicts = append(rr.Verdicts, v)
			}
		}
		out.Replicas = append(out.Replicas, rr)
	}
	return &out
}
