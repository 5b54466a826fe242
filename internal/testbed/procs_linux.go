//go:build linux

package testbed

import (
	"runtime"
)

// The forwarder process (fwdproc_linux.go) holds two things that keep its
// forwarder threads on time.
//
// One more Go P per forwarder thread. Each direction runs on a thread of
// its own that spends its life asleep in ppoll. When it wakes, it needs one
// of the runtime's Ps to run again; if every P is busy, it waits until the
// runtime takes one back from a thread blocked in a system call, which its
// monitor does on a tick that backs off to 10 ms when the process is quiet.
// Measured with 8 iperf3 streams through a 50 Mbit/s, 20 ms line on the
// project's busy 2-core VM, three alternating rounds each: GOMAXPROCS 2
// wrote packets 71 µs–1.1 ms late on average (0.8–2.0% over 1 ms),
// GOMAXPROCS 6 wrote them 23–160 µs late (0.2–1.1% over 1 ms).
//
// A CPU latency request of 0 µs (/dev/cpu_dma_latency, the kernel's PM QoS
// interface, as cyclictest holds it). On a virtual machine an idle vCPU
// halts, and the hypervisor takes tens of microseconds to milliseconds to
// run it again when a timer or another CPU wakes it: on this project's
// Firecracker VMs (cpuidle driver haltpoll, guest halt polling off) a
// thread asleep in ppoll for 1 ms woke 77 µs late at the median, 244 µs at
// p90 and 1.9 ms at p99, idle. With the request held, cpuidle only polls
// (state POLL, exit latency 0) and the same sleep woke 31 / 47 / 74 µs
// late; through the delay line, a 10 ms line's probes reached the far
// socket 268–430 µs late at the median and 1.6–6.0 ms at p95 without it,
// 94–147 µs and 175–230 µs with it. The cost is that idle CPUs spin
// instead of halting while a line exists; the request goes with the
// forwarder process (the kernel drops it when the file closes).

// The request is sysinfo's (HoldCPULatency), as narrows host holds it.
// Only a cpuidle governor reads it: with no driver ("none", as on some
// VMs of this project's kind, whose kernel has haltpoll built in but does
// not register it) an idle CPU simply halts. There, a 1 ms ppoll sleep
// woke 38–45 µs late at the median and 91–146 µs at p99 with the request
// held and without it alike (1,500 sleeps each way, twice, the machine
// near idle).

// addForwarderPs gives the process one more P for each of n forwarder
// threads. The forwarder process runs its two for its whole life, so
// nothing is ever given back.
func addForwarderPs(n int) { runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n) }
