package sysinfo

import (
	"net"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// factsBudget bounds ReadFacts: the facts describe a run, they never delay
// or fail one. Every reader below is a file read or one ioctl; the bound
// is for a host whose /sys or driver stalls.
const factsBudget = 50 * time.Millisecond

// ReadFacts describes this host and the network interface its traffic to
// peer leaves by (peer "" or unparsable: every interface that is up and
// not loopback). What the OS does not tell is left empty and said in
// Missing. It never fails and returns within factsBudget.
func ReadFacts(peer string) *result.Facts {
	done := make(chan *result.Facts, 1)
	go func() { done <- readFacts(peer) }()
	t := time.NewTimer(factsBudget)
	defer t.Stop()
	select {
	case f := <-done:
		return f
	case <-t.C:
		f := baseFacts()
		f.Missing = append(f.Missing, "the host's facts took longer than "+factsBudget.String()+" to read: only the portable ones are given")
		return f
	}
}

func baseFacts() *result.Facts {
	f := &result.Facts{OS: runtime.GOOS, Cores: runtime.NumCPU()}
	f.Hostname, _ = os.Hostname()
	return f
}

func readFacts(peer string) *result.Facts {
	f := baseFacts()
	hostFacts(f) // per OS: kernel, CPU, memory, TCP
	ifs, why := routeInterfaces(peer)
	if why != "" {
		f.Missing = append(f.Missing, why)
	}
	for _, ifi := range ifs {
		n := result.NIC{Name: ifi.Name, MTU: ifi.MTU}
		if addrs, err := ifi.Addrs(); err == nil {
			for _, a := range addrs {
				n.Addresses = append(n.Addresses, a.String())
			}
		}
		f.Missing = append(f.Missing, nicFacts(&n)...) // per OS: driver, speed, offloads, coalescing
		f.Interfaces = append(f.Interfaces, n)
	}
	return f
}

// routeInterfaces finds the interface the route to peer leaves by: a UDP
// socket "connected" to the peer sends nothing, but the kernel chooses
// its source address by the routing table, and that address names the
// interface. This works alike on Linux, Windows and the BSDs.
func routeInterfaces(peer string) ([]net.Interface, string) {
	all, err := net.Interfaces()
	if err != nil {
		return nil, "interfaces: " + err.Error()
	}
	if ip := net.ParseIP(peer); ip != nil {
		if c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: ip, Port: 9}); err == nil {
			local := c.LocalAddr().(*net.UDPAddr).IP
			c.Close()
			if ifi, ok := holding(all, local); ok {
				return []net.Interface{ifi}, ""
			}
		}
		// No route, or an address no interface holds (a NAT's): say so and
		// describe every interface instead.
		return upInterfaces(all), "the interface routing to " + peer + " (every interface that is up is given instead)"
	}
	return upInterfaces(all), ""
}

func upInterfaces(all []net.Interface) []net.Interface {
	var up []net.Interface
	for _, ifi := range all {
		if ifi.Flags&net.FlagUp != 0 && ifi.Flags&net.FlagLoopback == 0 {
			up = append(up, ifi)
		}
	}
	sort.Slice(up, func(i, j int) bool { return up[i].Index < up[j].Index })
	return up
}

// PeerIP is the address ReadFacts should route to for a target: host, or
// host:port, or a URL-like DSN's host. A name is resolved only when the
// resolver answers within a few milliseconds (from its cache, or
// /etc/hosts); otherwise "" (facts then describe every interface).
func PeerIP(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	done := make(chan string, 1)
	go func() {
		addrs, err := net.LookupIP(host)
		if err != nil || len(addrs) == 0 {
			done <- ""
			return
		}
		done <- addrs[0].String()
	}()
	select {
	case ip := <-done:
		return ip
	case <-time.After(20 * time.Millisecond):
		return ""
	}
}
