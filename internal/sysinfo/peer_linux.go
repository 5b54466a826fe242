//go:build linux

package sysinfo

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PeerProcess is the process on this host that holds the other end of a
// TCP connection from local to remote (a database server's backend for a
// client's session on loopback): its PID, found by the socket's inode
// (from the kernel's sock_diag, else /proc/net/tcp and tcp6) among
// /proc/*/fd (which needs root for another user's process).
func PeerProcess(local, remote net.Addr) (int, error) {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return 0, errors.New("not a TCP connection")
	}
	lp, rp := l.AddrPort(), r.AddrPort()
	// The kernel writes these files a page at a time from a table that
	// may change between the pages, and an entry can be missed (a test
	// run beside others missed its own): read them again before saying
	// none.
	// Asked of the kernel first, exactly (diagInode); /proc/net/tcp
	// where it will not say.
	inode, _ := diagInode(rp, lp)
	for try := 0; try < 5 && inode == ""; try++ {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			if inode = peerInode(f, lp, rp); inode != "" {
				break
			}
		}
	}
	if inode == "" {
		return 0, errors.New("no socket on this host holds its other end")
	}
	want := "socket:[" + inode + "]"
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && link == want {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process readable here holds socket %s (another user's needs root)", inode)
}

// peerInode is the inode of the socket in a /proc/net/tcp file whose own
// address is ours' remote and whose remote is ours: "" if none.
func peerInode(file string, ours, theirs netip.AddrPort) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		la, lerr := procAddr(fs[1])
		ra, rerr := procAddr(fs[2])
		if lerr == nil && rerr == nil && sameAddrPort(la, theirs) && sameAddrPort(ra, ours) {
			return fs[9]
		}
	}
	return ""
}

// procAddr reads /proc/net/tcp's "0100007F:1F90": the address in 32-bit
// words of host order (little-endian here), the port in hex.
func procAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, errors.New("no port")
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, errors.New("bad address")
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// sameAddrPort compares two endpoints, an IPv4 address and its IPv6
// mapping alike.
func sameAddrPort(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}

// ProcessCPU is the CPU time a process has used (user and system), from
// /proc/PID/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The fields after the command (in parentheses, which may hold
	// spaces): utime and stime are the 12th and 13th after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unreadable stat")
	}
	fs := strings.Fields(s[i+1:])
	if len(fs) < 13 {
		return 0, errors.New("unreadable stat")
	}
	u, uerr := strconv.ParseInt(fs[11], 10, 64)
	st, serr := strconv.ParseInt(fs[12], 10, 64)
	if uerr != nil || serr != nil {
		return 0, errors.New("unreadable stat")
	}
	return time.Duration(u+st) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, 100 on every Linux narrows runs on.
const clockTicks = 100
