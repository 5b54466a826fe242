// Package agent is the responder a DBA starts on the far side: it accepts
// connections, authenticates them, enforces limits (connections, concurrent
// tests, duration, sizes) and a deadline on every read, and runs the data
// side of each test. It only ever sends on connections a client opened, and
// it never prints: it logs through the slog.Logger it is given.
package agent
