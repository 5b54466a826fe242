// Package testbed owns the project's test hosts: real Linux network
// namespaces joined by a veth pair and optionally shaped with tc tbf, so
// that tests of `narrows net stream|rr` and `narrows serve` run over real
// TCP/IP links on a single machine without touching any outside network.
//
// It will later also own a userspace WAN delay line (this kernel has tbf
// and htb but no netem, so delay must be added in userspace).
//
// Everything here needs root on Linux; elsewhere every constructor returns
// an error wrapping ErrUnsupported. Use NewTestLink from tests.
package testbed
