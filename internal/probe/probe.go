// Package probe holds what every probe shares: how interval records leave a
// running probe, and the sentinel for a figure that does not apply. Each
// probe lives in its own folder below (stream, rr, ...). A probe measures
// and returns a result; it never prints, and never advises.
package probe

import "github.com/narrows/narrows/internal/result"

// Emit receives interval records as they happen. It must not block long:
// the probe calls it from its measuring loop.
type Emit func(result.Interval)

// Interrupted is the reason recorded when the user stops a run.
const Interrupted = "interrupted"
