// Package plan owns what the plans (narrows plan backup, replica, sync,
// chatty) take in besides a measurement: today the one grammar of
// --assume, NAME=VALUE[,NAME=VALUE…], repeatable, and the readers of its
// values by metric's one table of units. Each command names the figures it
// knows and sets them; no command parses --assume on its own. It does no
// I/O and prints nothing.
package plan
