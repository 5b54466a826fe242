package doctor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
	"github.com/narrows/narrows/internal/words"
)

// Config is a doctor run: what the user gave, the time the steps share,
// and where what happens goes.
type Config struct {
	Inputs Inputs
	Budget time.Duration
	// Start is when the budget's clock started: the command's start,
	// before the agent's handshake and the checks of what was given,
	// which the budget covers as the steps; zero is when Run is called.
	// The budget is the run's whole time, its end (Finish) too.
	Start time.Time
	// Target names what doctor examined (the agent, or "this host");
	// Software is the agent's release, as it said at the check.
	Target, Software string
	// RunName is the run's file, which the plans' figures cite as their
	// source ("measured (RUN)"), as `plan … --from RUN` would.
	RunName string
	Hooks   Hooks
}

// Hooks are what the command line shows and keeps while doctor runs; any
// may be nil.
type Hooks struct {
	// Start: step k (of Steps) starts, given share of the budget, which
	// ends at end; the func it returns is called when the step ends.
	Start   func(k int, name string, share time.Duration, end time.Time) (stop func())
	Skipped func(k int, name, why string)
	Done    func(k int, name string, s result.DoctorStep)
	// Record gets each step's records, in order, as its own command
	// would write them: the run's file, which `plan … --from` reads.
	Record func(rep *result.Report, ivs []result.Interval) error
}

// Finish is what the budget keeps, after the steps, for the run's end:
// its file, its report, the history. With the checks before the steps
// outside the budget, a 30 s doctor of 15 steps took 31.4 s on a machine
// busy with other tests, its steps 28 s (TestDoctorLoopback); with them
// inside and this kept, 27.4 s idle and 27.1 s beside two busy loops and
// a writer flushing 200 MB at a time.
const Finish = time.Second

// Overrun is how far past its budget doctor lets a step run before it
// stops it: steps end near their shares on their own (each sets its
// duration from it), so this is only ever used against a far side that
// does not end its tests.
func Overrun(budget time.Duration) time.Duration { return max(30*time.Second, budget/4) }

// Run runs every step that applies, in order, each given its share of
// the budget, and returns doctor's Report: the steps, their Reports and
// intervals, and the verdicts. Its error is ErrInterrupted when ctx ended
// the run (the Report is then partial); *NotAllRan when a step that
// applied failed or did not run (the Report is whole: it says which, and
// why); else nil. Exit 0 means every step asked ran.
func (c Config) Run(ctx context.Context, env command.Env) (*result.Report, error) {
	budget := c.Budget
	d := &result.Doctor{Budget: result.Seconds(budget), Steps: []result.DoctorStep{}}
	start := c.Start
	if start.IsZero() {
		start = time.Now()
	}
	now := env.Now
	if now == nil {
		now = time.Now
	}
	started := now() // the report's started_at: the run's start, not its end
	// The budget holds whatever the far side does: past it and a grace,
	// the step running is stopped and the rest are skipped. Each test on
	// the agent has bounds of its own (client.Bounds); this bounds the sum.
	over := Overrun(budget)
	stepsCtx, stopSteps := context.WithDeadlineCause(ctx, start.Add(budget+over),
		fmt.Errorf("doctor's budget of %s ran out (and %s of grace)", budget, over))
	defer stopSteps()
	h := c.Hooks
	skipped := func(k int, step result.DoctorStep, why string) {
		step.Status, step.Why = result.StepSkipped, why
		d.Steps = append(d.Steps, step)
		if h.Skipped != nil {
			h.Skipped(k, step.Name, why)
		}
	}
	misbehaved := "" // why the agent is asked nothing more
	// The budget is shared among the steps that apply.
	weightsLeft, fixedLeft := 0.0, time.Duration(0)
	for _, st := range Steps {
		if st.Applies(c.Inputs) == nil {
			weightsLeft += st.Weight
			fixedLeft += st.Fixed
		}
	}
	prior := plan.Saved{Name: c.RunName}
	// asked are the steps that applied to what was given (a step's
	// Command may still find it cannot apply, from what the steps before
	// it measured: that step was not asked either).
	asked := make([]bool, len(Steps))
	for k, st := range Steps {
		step := result.DoctorStep{Name: st.Name, Area: st.Area}
		if err := st.Applies(c.Inputs); err != nil {
			skipped(k, step, err.Error())
			continue
		}
		asked[k] = true
		left := budget - Finish - time.Since(start)
		share := Share(left, fixedLeft, st.Weight, weightsLeft)
		weightsLeft -= st.Weight
		fixedLeft -= st.Fixed
		step.Budget = result.Seconds(share)
		switch {
		case ctx.Err() != nil:
			step.Status, step.Why = result.StepSkipped, "interrupted"
			d.Steps = append(d.Steps, step)
			continue
		case stepsCtx.Err() != nil:
			skipped(k, step, context.Cause(stepsCtx).Error())
			continue
		case st.Agent && misbehaved != "":
			skipped(k, step, misbehaved)
			continue
		}
		given := max(share, time.Second)
		if st.Agent && c.Inputs.AgentMaxDuration > 0 {
			// A test past the agent's --max-duration would be refused: the
			// step gets what the agent allows, and leaves the rest.
			given = min(given, c.Inputs.AgentMaxDuration)
		}
		run, err := st.Command(c.Inputs, prior, given)
		if err != nil {
			asked[k] = !errors.Is(err, command.ErrNotApplicable)
			skipped(k, step, err.Error())
			continue
		}
		stop := func() {}
		if h.Start != nil {
			stop = h.Start(k, st.Name, share, start.Add(budget))
		}
		var ivs []result.Interval
		stepEnv := command.Env{Now: env.Now, Tool: env.Tool, Emit: func(iv result.Interval) { ivs = append(ivs, iv) }}
		t0 := time.Now()
		rep, err := run.Run(stepsCtx, stepEnv)
		stop()
		step.Elapsed = result.Seconds(time.Since(t0))
		step.Intervals, step.Report = ivs, rep
		switch {
		case err == nil && rep != nil && !rep.Partial:
			step.Status = result.StepRan
		default:
			step.Status = result.StepFailed
			switch {
			case stepsCtx.Err() != nil && ctx.Err() == nil:
				step.Why = "stopped: " + context.Cause(stepsCtx).Error()
			case err != nil:
				step.Why = untrusted.OneLine(err.Error())
			case rep != nil:
				step.Why = rep.Error
			}
		}
		if errors.Is(err, client.ErrMisbehaved) {
			misbehaved = fmt.Sprintf("the agent misbehaved in step %d (%s): it is asked nothing more", k+1, st.Name)
		}
		if rep != nil {
			prior.Reports = append(prior.Reports, rep)
			if h.Record != nil {
				if err := h.Record(rep, ivs); err != nil {
					return nil, err
				}
			}
		}
		d.Steps = append(d.Steps, step)
		if h.Done != nil {
			h.Done(k, st.Name, step)
		}
	}
	d.Elapsed = result.Seconds(time.Since(start))
	d.Verdicts = Verdicts(d.Steps)
	rep := result.NewReport("doctor", c.Target, env.Tool, started)
	rep.Agent = c.Software
	rep.Doctor = d
	rep.Findings = d.Verdicts
	// Both ends' facts, as the first step that reached the agent read them
	// (this host's then routed to it); else this host's, as any step read them.
	for _, s := range d.Steps {
		if s.Report == nil {
			continue
		}
		if s.Report.AgentFacts != nil {
			rep.Facts, rep.AgentFacts = s.Report.Facts, s.Report.AgentFacts
			break
		}
		if rep.Facts == nil {
			rep.Facts = s.Report.Facts
		}
	}
	if ctx.Err() != nil {
		rep.Partial, rep.Error = true, "interrupted"
		return rep, command.ErrInterrupted
	}
	// d.Steps holds one step for each of Steps, in order.
	nAsked, missed := 0, []result.DoctorStep{}
	for k, s := range d.Steps {
		if !asked[k] {
			continue
		}
		nAsked++
		if s.Status != result.StepRan {
			missed = append(missed, s)
		}
	}
	if len(missed) > 0 {
		return rep, &NotAllRan{Asked: nAsked, Missed: missed}
	}
	return rep, nil
}

// Verdicts are every step's findings that matter, most severe first (in
// the steps' order within a severity), each subject once: a finding
// another step's withdraws is left out, and of two findings with the
// same code about the same thing (the same path and direction, the same
// disk, the same database, the same plan) the first is kept, whatever
// their words, as is the first of two with the same code and words.
func Verdicts(steps []result.DoctorStep) []result.Finding {
	var out, all []result.Finding
	for _, s := range steps {
		if s.Report != nil {
			all = append(all, s.Report.Findings...)
		}
	}
	withdrawn := advisor.Withdrawn(all)
	seen := map[string]bool{}
	for _, sev := range []string{"warning", "info"} {
		for _, s := range steps {
			if s.Report == nil {
				continue
			}
			subject := Subject(s.Report)
			about := words.About(s.Report)
			said := map[string]bool{} // this step's: each is its own
			for _, f := range s.Report.Findings {
				key := f.Code + "\x00" + subject
				// The same words under the same code say nothing new either,
				// whatever they are about (two round trips' sizes on a
				// path where both take as long).
				same := f.Code + "\x00" + f.Summary
				if f.Severity != sev || seen[key] || seen[same] || withdrawn[f.Code] {
					continue
				}
				said[key], said[same] = true, true
				f.About = about
				out = append(out, f)
			}
			for k := range said {
				seen[k] = true
			}
		}
	}
	if out == nil {
		out = []result.Finding{}
	}
	return out
}
