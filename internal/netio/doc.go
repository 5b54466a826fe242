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

// BatchFor is the read batch for a receiver whose socket buffers were
// fixed at window bytes (0: left to the OS's autotuning): Batch, or no
// batching at all (1 byte, the kernel's default) when the window is fixed.
// Bytes left waiting in the receive buffer for a batch close the window
// the receiver advertises by as much; with a small fixed buffer that
// throttles a window-limited stream, which is the very thing --window
// measures. Across the testbed's 80 ms delay line with --window 64K,
// waiting for 64 KiB held one stream to 58% of window/RTT; reading as data
// came, as a replica does, gave 97%.
//
// The same holds when the host caps the receive buffer (net.ipv4.tcp_rmem):
// across the testbed's 40 ms line with the maximum at 128 KiB, batches
// held one stream to 0.58-0.70 of what the replication stream carried.
// So batching needs a maximum buffer of at least batchRoom × Batch, where
// a batch costs at most a few percent of the window.
func BatchFor(window int64) int { return batchFor(window, maxReceiveBuffer()) }

// batchFor is the rule, given the namespace's largest receive buffer.
func batchFor(window int64, maxBuffer int) int {
	if window > 0 || maxBuffer < batchRoom*Batch {
		return 1
	}
	return Batch
}

// batchRoom: how many batches the host's largest receive buffer must hold
// before reads are batched.
const batchRoom = 32

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
