// Package commit is synchronous log shipping, emulated: `narrows net
// commit`. The client (Run) sends log blocks on one data connection,
// keeping up to InFlight unacknowledged; the agent's end (Log) reads
// them, writes them to a log file of its own, written round and round as
// a log is, makes them durable when asked, and acknowledges them: the
// commit latency a synchronous replica adds, and the log throughput it
// allows.
//
// Both ends live here, so the agent owns only its allowlist and limits.
// On the data connection the client sends blocks of TestSpec.Block bytes
// back to back; the agent answers with acknowledgements of AckSize bytes,
// each the number of blocks acknowledged so far (little-endian), the
// first of them (0) once its file is laid out: the client sends nothing
// before it. The file is probe/disk's test file (its own, without a name
// on Linux, the free-space checks, removal on every way out). It never
// prints and never advises.
package commit
