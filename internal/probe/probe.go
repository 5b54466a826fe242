// Package probe holds what every probe shares: how interval records leave a
// running probe, and the one-line error a person fixes (UserErrorf, in
// narrows' one error shape, errext). Each
// probe lives in its own folder below (stream, rr, ...). A probe measures
// and returns a result; it never prints, and never advises.
package probe

import (
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// Emit receives interval records as they happen. It must not block long:
// the probe calls it from its measuring loop.
type Emit func(result.Interval)

// Interrupted is the reason recorded when the user stops a run.
const Interrupted = "interrupted"

// KernelRTT is the kernel's view of a measuring connection (TCP_INFO):
// its smoothed and minimum RTT and its retransmits, or why it cannot be
// read here (unavailable).
func KernelRTT(sc sysinfo.Controller) (rtt, minRTT result.Seconds, retransmits int64, unavailable string) {
	ti, err := sysinfo.ReadTCPInfo(sc)
	if err != nil {
		return 0, 0, 0, sysinfo.NoTCPInfo(err)
	}
	return result.Seconds(ti.RTT), result.Seconds(ti.MinRTT), ti.Retransmits, ""
}

// TryNotAllowed is why a try (flag: --try-rps, --try-offloads,
// --try-coalescing) did not ask an agent whose limits do not allow a test
// to change its settings.
func TryNotAllowed(flag string) string {
	return "the agent does not let a test change its settings: its operator starts it with --allow-try (an agent from before " + flag + " cannot)"
}
