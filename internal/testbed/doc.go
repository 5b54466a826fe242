// Package testbed owns the project's test hosts: real Linux network
// namespaces on one machine, so that tests of `narrows net stream|rr` and
// `narrows serve` run over real TCP/IP links without touching any outside
// network. Two kinds of link join a pair of hosts:
//
//   - Link: a veth pair, optionally shaped with tc tbf (rate only);
//   - DelayLine: a WAN delay line. This kernel has tbf and htb but no
//     netem, so delay cannot come from tc: a TUN device in each namespace
//     and a forwarder in this process move every packet between them
//     through a model of a WAN path (random loss, a drop-tail router
//     queue, serialization at a rate, propagation delay with jitter), per
//     direction, holding each packet until its departure time.
//
// cmd/narrows-testbed sets a delay line up for people; package
// experiments measures narrows across it.
//
// Everything here needs root on Linux; elsewhere every constructor returns
// an error wrapping ErrUnsupported. Use NewTestLink and NewTestDelayLine
// from tests. Nothing here touches the root namespace's devices or routes.
package testbed
