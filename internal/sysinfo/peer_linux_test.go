//go:build linux

package sysinfo

import (
	"net"
	"net/netip"
	"os"
	"testing"
)

// TestPeerProcess: the other end of a loopback connection is found in
// /proc, here this process's own listener's (IPv4 and IPv6), and
// /proc/net/tcp's host-order addresses read right.
func TestPeerProcess(t *testing.T) {
	for _, nw := range []string{"127.0.0.1:0", "[::1]:0"} {
		l, err := net.Listen("tcp", nw)
		if err != nil {
			t.Logf("%s: %v (no such loopback here)", nw, err)
			continue
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		// The kernel names the accepted socket exactly, as /proc/net/tcp
		// does when it lists it; a socket that is not there is an error.
		ours, theirs := c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
		ino, err := diagInode(theirs, ours)
		if err != nil || ino == "" || ino == "0" {
			t.Fatalf("%s: sock_diag: inode %q, %v", nw, ino, err)
		}
		if p := peerInode("/proc/net/tcp", ours, theirs) + peerInode("/proc/net/tcp6", ours, theirs); p != "" && p != ino {
			t.Errorf("%s: sock_diag's inode %s, /proc/net/tcp's %s", nw, ino, p)
		}
		if ino, err := diagInode(theirs, netip.AddrPortFrom(ours.Addr(), ours.Port()+1)); err == nil {
			t.Errorf("%s: sock_diag found %s for a port nothing uses", nw, ino)
		}
		pid, err := PeerProcess(c.LocalAddr(), c.RemoteAddr())
		if err != nil || pid != os.Getpid() {
			t.Fatalf("%s: peer %d, %v; want this process, %d", nw, pid, err, os.Getpid())
		}
		if cpu, err := ProcessCPU(pid); err != nil || cpu < 0 {
			t.Fatalf("ProcessCPU(%d) = %v, %v", pid, cpu, err)
		}
		c.Close()
		s.Close()
		l.Close()
	}
	if a, err := procAddr("0100007F:1F90"); err != nil || a != netip.MustParseAddrPort("127.0.0.1:8080") {
		t.Fatalf("procAddr: %v, %v", a, err)
	}
	if _, err := PeerProcess(&net.UDPAddr{}, &net.UDPAddr{}); err == nil {
		t.Fatal("a UDP address: want an error")
	}
}
