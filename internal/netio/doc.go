// Package netio runs the data plane's loops so that the measuring tool is
// never the bottleneck of the measurement. Go keeps every socket
// non-blocking and parks a goroutine in its netpoller whenever a buffer is
// full or empty; iperf3 and sockperf block in the kernel on a thread of
// their own, which on a fast path saves a wake-up per write and per round
// trip (measured on loopback: about 30% more single-stream throughput and
// round trips). A Socket gives a loop that shape where the platform allows it,
// with a kernel timeout on every call so that a loop can always notice
// that it should stop.
package netio

import (
	"errors"
	"time"
)

// Batch is what a bulk receiver asks for before its read wakes (see
// Socket.ReadBatch): half of iperf3's 128 KiB block.
const Batch = 64 << 10

// Slice is the longest one call blocks before it returns ErrSlice.
const Slice = 100 * time.Millisecond

// ErrSlice is returned by Read and Write when Slice passed with nothing
// moved: not a failure, a chance to check whether to stop.
var ErrSlice = errors.New("netio: nothing moved within the slice")

// Conn is a data connection as a loop inside Run sees it.
type Conn interface {
	// Read reads what is there (at least one byte), io.EOF at the end, or ErrSlice.
	Read(p []byte) (int, error)
	// Write writes some of p (perhaps not all), or returns ErrSlice.
	Write(p []byte) (int, error)
}
