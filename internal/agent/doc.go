// Package agent is the responder a DBA starts on the far side: it accepts
// connections, authenticates them, enforces limits (connections, concurrent
// tests, duration, sizes, memory) and a deadline on every read, and runs
// the data side of each test. Far-side tests (far.go: disk, on its own
// storage) it runs through the same probe packages a local run uses; of
// those it owns only the allowlist and the limits, and it touches no path
// outside the directories its operator named (--disk-path). It only ever
// sends on connections a client opened, and it never prints: it logs
// through the slog.Logger it is given.
package agent
