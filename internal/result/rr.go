package result

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// RR is the summary of `narrows net rr`.
type RR struct {
	Config RRConfig `json:"config"`
	// Connect is the TCP handshake of the measuring connection.
	Connect    Seconds `json:"connect_seconds"`
	RoundTrips int64   `json:"round_trips"`
	Duration   Seconds `json:"duration_seconds"`
	Rate       float64 `json:"round_trips_per_second"`
	Latency
	// KernelRTT is the kernel's smoothed RTT for the connection
	// (TCP_INFO), beside the application's full round trip: the
	// difference is what the two ends' stacks and programs add.
	KernelRTT      Seconds `json:"kernel_rtt_seconds,omitempty"`
	KernelMinRTT   Seconds `json:"kernel_min_rtt_seconds,omitempty"`
	Retransmits    int64   `json:"retransmits"`
	TCPUnavailable string  `json:"tcp_unavailable,omitempty"`
	CPU            CPU     `json:"cpu"`
	Stopped        string  `json:"stopped,omitempty"`
	// Coalescing is --try-coalescing's experiment, when asked for.
	Coalescing *CoalescingTry `json:"coalescing_try,omitempty"`
}

// RRConfig is what was asked for.
type RRConfig struct {
	RequestBytes  int64   `json:"request_bytes"`
	ResponseBytes int64   `json:"response_bytes"`
	Duration      Seconds `json:"duration_seconds,omitempty"`
	Count         int64   `json:"count,omitempty"`
	Rate          float64 `json:"rate_per_second,omitempty"`
	Interval      Seconds `json:"interval_seconds"`
	Queries       int64   `json:"queries"` // for the wire-time arithmetic
}

// CoalescingChange is what a test changed of an end's receive interrupt
// coalescing for its length (ethtool's rx-usecs, rx-frames and
// adaptive-rx, turned to their least: an interrupt for each packet as it
// arrives), and whether it was put back.
type CoalescingChange struct {
	End       string `json:"end"` // EndAgent: the end whose NIC it was
	Interface string `json:"interface,omitempty"`
	// Before are the fields changed, as they were; Set, as set. Both
	// empty when every field was at its least already.
	Before   map[string]int64 `json:"before,omitempty"`
	Set      map[string]int64 `json:"set,omitempty"`
	Restored bool             `json:"restored,omitempty"`
	// Error says why nothing was changed (the driver keeps no coalescing
	// or refuses the change, not root, not Linux, the agent does not
	// allow it), or what failed while putting it back.
	Error string `json:"error,omitempty"`
}

// CoalescingFields are the fields a change touches, as ethtool names
// them: no other key is taken from an agent.
var CoalescingFields = []string{"rx-usecs", "rx-frames", "adaptive-rx"}

// CoalescingWords is m's fields in ethtool's order: "rx-usecs 50,
// adaptive-rx 1".
func CoalescingWords(m map[string]int64) string {
	var parts []string
	for _, f := range CoalescingFields {
		if v, ok := m[f]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", f, v))
		}
	}
	return strings.Join(parts, ", ")
}

// Check bounds a change an agent sent: its known fields, their values.
func (c *CoalescingChange) Check() error {
	for _, m := range []map[string]int64{c.Before, c.Set} {
		for k, v := range m {
			if !slices.Contains(CoalescingFields, k) || v < 0 || v > math.MaxUint32 {
				return fmt.Errorf("coalescing %q = %d: not a field a change touches, or out of range", k, v)
			}
		}
	}
	return nil
}

// CoalescingTry is `net rr --try-coalescing`'s experiment: short round
// trip blocks in pairs, the agent's receive coalescing as it is and then
// at its least, until the pairs' differences decide.
type CoalescingTry struct {
	End       string            `json:"end"` // EndAgent
	Interface string            `json:"interface,omitempty"`
	Before    map[string]int64  `json:"before,omitempty"` // as it was, the fields changed
	Set       map[string]int64  `json:"set,omitempty"`    // as set for the blocks at the least
	Block     Seconds           `json:"block_seconds"`    // each block's length
	Blocks    []CoalescingBlock `json:"blocks,omitempty"`
	// AsIs and Least are the pairs' mean median round trips; Gain the
	// mean of the pairs' differences (as is less at the least), Margin
	// the half-width of its 95% confidence interval.
	AsIs     Seconds `json:"as_is_p50_seconds,omitempty"`
	Least    Seconds `json:"least_p50_seconds,omitempty"`
	Gain     Seconds `json:"gain_seconds"`
	Margin   Seconds `json:"gain_margin_seconds"`
	Verdict  string  `json:"verdict"`
	Why      string  `json:"why,omitempty"`
	Restored bool    `json:"restored,omitempty"` // every change put back
}

// CoalescingBlock is one block of round trips.
type CoalescingBlock struct {
	Least      bool    `json:"least"` // the coalescing at its least; else as it is
	RoundTrips int64   `json:"round_trips"`
	P50        Seconds `json:"p50_seconds"`
}

// CoalescingTry's verdicts.
const (
	CoalescingCosts    = "costs"     // round trips were faster at the least
	CoalescingFree     = "free"      // no difference beyond the floor
	CoalescingUnjudged = "unjudged"  // the pairs did not decide
	CoalescingNotTried = "not_tried" // nothing was changed: Why
	CoalescingLeast    = "least"     // every field at its least already
)
