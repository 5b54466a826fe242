// Package result is the Report: the versioned schema of everything a run
// measured, and of its interval records. The JSON output is these structs
// as they are, so a saved run can be re-rendered or re-advised offline.
// Inside the code times are time.Duration and sizes int64 bytes; in JSON
// every value carries its unit in its name (_seconds, _bytes,
// _bits_per_second). Nothing here measures, advises or prints.
package result
