// Package plan owns what the plans (narrows plan backup, replica, sync,
// chatty) take in besides a measurement: the one grammar of --assume,
// NAME=VALUE[,NAME=VALUE…], repeatable, and the readers of its values by
// metric's one table of units; each plan's names and how its figures
// given by hand are set; and a saved run (Saved), read instead of
// measuring, with what a plan takes from it where no model is needed to
// read it (BackupFrom). Each command names the figures it knows and sets
// them; no command parses --assume on its own. It does no I/O and prints
// nothing.
package plan
