// Package cli is the command line: it parses flags, wires a probe to its
// outputs and advisor, and is the only place that prints or chooses an exit
// code. Everything it needs from the OS comes in through Env.
package cli
