// Package sysinfo is the one place that asks the operating system for
// figures the standard library does not give: a socket's TCP_INFO and the
// process's CPU time. Each figure has a portable type and per-platform
// readers behind build tags; where a platform cannot give a figure, the
// reader returns ErrUnavailable and callers say so instead of showing zeros.
package sysinfo
