//go:build linux

package testbed

import (
	"runtime"
	"sync"
)

// Each direction of a delay line runs on a thread of its own that spends
// its life asleep in ppoll. When it wakes, it needs one of the Go
// runtime's Ps to run again; if every P is busy, it waits until the
// runtime takes one back from a thread blocked in a system call, which
// its monitor does on a tick that backs off to 10 ms when the process is
// quiet. That wait is pure lateness. So while delay lines exist, the
// process gets one more P per forwarder thread.
//
// Measured with 8 iperf3 streams through a 50 Mbit/s, 20 ms line on the
// project's busy 2-core VM, three alternating rounds each: GOMAXPROCS 2
// wrote packets 71 µs–1.1 ms late on average (0.8–2.0% over 1 ms),
// GOMAXPROCS 6 wrote them 23–160 µs late (0.2–1.1% over 1 ms).

var procs struct {
	mu      sync.Mutex
	threads int // forwarder threads alive
	base    int // GOMAXPROCS before the first one
	set     int // what we set it to, to restore only our own change
}

// addThreads accounts for n more (or, negative, fewer) forwarder threads.
func addThreads(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.threads == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.threads += n
	want := procs.base + procs.threads
	cur := runtime.GOMAXPROCS(0)
	switch {
	case procs.threads == 0 && cur == procs.set:
		runtime.GOMAXPROCS(procs.base) // the last line closed: put it back
	case procs.threads > 0 && cur < want:
		runtime.GOMAXPROCS(want)
		procs.set = want
	}
}
