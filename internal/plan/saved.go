package plan

import "github.com/narrows/narrows/internal/result"

// Saved is what a plan reads instead of measuring (--from): the summary
// records of an earlier run, in their order, and the name its figures'
// sources cite ("measured (NAME)"). The command line reads them from a
// run's file; doctor gives the Reports of the steps it has run so far.
type Saved struct {
	Name    string
	Reports []*result.Report
}

// Given says whether there is a run to read.
func (s Saved) Given() bool { return s.Name != "" || len(s.Reports) > 0 }

// Last is the last summary that has what has looks for, nil if none has.
func (s Saved) Last(has func(*result.Report) bool) *result.Report {
	for i := len(s.Reports) - 1; i >= 0; i-- {
		if has(s.Reports[i]) {
			return s.Reports[i]
		}
	}
	return nil
}

// Measured is a figure's source when it was read from this run.
func (s Saved) Measured() string { return "measured (" + s.Name + ")" }
