// Package sysinfo is the one place that asks the operating system for
// figures the standard library does not give: a socket's TCP_INFO, the
// process's CPU time, and the host's facts (kernel, CPU, memory, the NIC a
// run's traffic leaves by with its driver, offloads and coalescing). Each
// figure has a portable type and per-platform readers behind build tags;
// where a platform cannot give a figure, the reader returns ErrUnavailable
// (or, for facts, lists it in Missing) and callers say so instead of
// showing zeros.
package sysinfo
