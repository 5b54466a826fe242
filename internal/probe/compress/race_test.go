//go:build race

package compress

// Under the race detector every memory access is instrumented, more so in
// some codecs than others: their speeds are the detector's, not theirs.
const raceEnabled = true
