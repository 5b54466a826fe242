package sysinfo

import "net"

// EthernetHeader is what a qdisc, a switch port counter and tbf count on
// top of each IP packet on an Ethernet (or veth, or loopback) interface.
// (A physical link also spends 24 bytes of preamble, FCS and inter-frame
// gap, which no counter in the host sees.)
const EthernetHeader = 14

// LinkHeaderBytes is the link-layer header each packet carries on the
// interface dev (InterfaceName): 0 on a layer-3 tunnel (a TUN
// device, WireGuard: the packets are bare IP, and a shaper on it counts
// whole IP packets), EthernetHeader on Ethernet, veth and loopback, and
// EthernetHeader where the system does not say (most links are Ethernet).
func LinkHeaderBytes(dev string) int64 {
	if dev == "" {
		return EthernetHeader
	}
	if h, ok := linkHeader(dev); ok {
		return h
	}
	return EthernetHeader
}

func holding(all []net.Interface, local net.IP) (net.Interface, bool) {
	for _, ifi := range all {
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if in, ok := a.(*net.IPNet); ok && in.IP.Equal(local) {
				return ifi, true
			}
		}
	}
	return net.Interface{}, false
}

// InterfaceName is the name of the interface that holds a connection's
// local address, "" when it is not an IP address, no interface holds it
// or they cannot be listed.
func InterfaceName(local net.Addr) string {
	var ip net.IP
	switch a := local.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	default:
		return ""
	}
	all, err := net.Interfaces()
	if err != nil {
		return ""
	}
	ifi, _ := holding(all, ip)
	return ifi.Name
}
