// Package doctor is what `narrows doctor` walks: one explicit registry of
// steps (registry.go), each a narrows command with the flags that fit
// what the user gave and the time it is given, and how the budget is
// shared among them. It measures nothing itself: internal/cli runs each
// step's command as its own command would run, and the plans read the
// steps' runs (--from) instead of measuring again.
//
// The registry is here rather than in internal/probe (STYLE.md's
// registry.go) because its entries need the probes' own facts (how many
// patterns a disk profile has) and internal/probe is imported by every
// probe: a registry there would import its own importers.
package doctor
