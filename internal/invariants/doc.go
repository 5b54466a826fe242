// Package invariants holds a Report to what any report must be, whatever
// it measured: no rate faster than the path can carry, no two findings
// that contradict, no two findings in the same words, no tuning command
// that lowers a setting, a start that is the start, no NaN or infinity,
// only known finding codes, and no verdict drawn from nothing.
//
// It reads a Report and its intervals and returns what is broken; it
// never measures, prints or changes the Report. The command line runs it
// on each Report it emits when NARROWS_CHECK_INVARIANTS=1 (every test run
// through internal/itest), `narrows report --check` on a saved run, and
// the verdict matrix on every report it makes.
package invariants
