package sysinfo

import "net"

// SameHost says a connection from local to remote joins two sockets of
// one machine: a loopback address, or the machine's own address at both
// ends (nothing crosses a network). Not TCP: false.
func SameHost(local, remote net.Addr) bool {
	l, ok1 := local.(*net.TCPAddr)
	r, ok2 := remote.(*net.TCPAddr)
	return ok1 && ok2 && (r.IP.IsLoopback() || r.IP.Equal(l.IP))
}
