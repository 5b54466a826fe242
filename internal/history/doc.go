// Package history owns the local run store (one SQLite file under the
// user's data directory) and the statistics that compare two runs. It is
// the only package that knows SQL for it; it never prints: cli renders
// what it returns.
package history
