package testbed

import (
	"net/netip"
	"sync"
	"time"
)

// SwitchOptions shape a Switch: hosts on one Ethernet switch, each port
// shaped on its own.
type SwitchOptions struct {
	// Hosts is how many hosts the switch joins (2 to 32).
	Hosts int
	// ToHost[i], when set, is the tbf rate (bit/s) of what the switch's
	// port sends host i: the path to it, whatever sends. FromHost[i] is
	// host i's own egress (tbf on its device): its NIC's rate, for all it
	// sends. 0 (or a slice too short) leaves it unshaped.
	ToHost, FromHost []int64
	// QueueLatency is each tbf's latency (its queue); 0 = DefaultQueueLatency.
	QueueLatency time.Duration
}

// Switch is hosts (namespaces) on one switch: a bridge in a namespace of
// its own, each host joined to it by a veth pair (Dev "eth0" in the host,
// "p<i>" on the bridge), all on one /24.
type Switch struct {
	Hosts   []*Host
	Options SwitchOptions
	// Bridge is the switch's namespace; Prefix the hosts' /24.
	Bridge string
	Prefix netip.Prefix

	closeOnce sync.Once
	closeErr  error
}

// Close deletes the hosts' namespaces and the switch's (the veth pairs
// go with them). It is idempotent.
func (s *Switch) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.teardown() })
	return s.closeErr
}

// portRate is v's i-th rate, 0 when v is too short.
func portRate(v []int64, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}
