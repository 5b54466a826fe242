// Package doctor is `narrows doctor`: one ordered, typed registry of
// steps (registry.go), each building a narrows command's typed core
// (internal/command) for what the user gave and the time it is given,
// and the run that shares the budget among them (run.go). A step is Go
// code, not a command line: a renamed field is a compile error, not a
// step that fails at run time. The steps run in this process, their
// Reports kept in memory; the plans read the Reports of the steps before
// them (plan.Saved) as `plan … --from` reads a saved run's file, so a
// figure is measured once and nothing is encoded and parsed back.
//
// The command line (internal/cli) reads doctor's flags into Inputs,
// shows the progress and writes the run's file and the report; doctor
// prints nothing.
package doctor
