//go:build linux

package sysinfo

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// diagInode asks the kernel (sock_diag over netlink, as ss does) for the
// one TCP socket whose own address is local and whose remote is remote,
// and says its inode ("" with an error when there is none or the kernel
// will not say). One exact lookup, unlike /proc/net/tcp, which the kernel
// writes a page at a time from a table that may change between pages (a
// test run beside others missed its own socket in five readings).
func diagInode(local, remote netip.AddrPort) (string, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return "", err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return "", err
	}
	var errs []error
	for _, fam := range families(local.Addr()) {
		ino, err := diagOne(fd, fam, local, remote)
		if err == nil {
			return ino, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// families are the address families a socket at a may have: an IPv4
// address's socket is AF_INET, or AF_INET6 holding it mapped.
func families(a netip.Addr) []uint8 {
	if a.Unmap().Is4() {
		return []uint8{unix.AF_INET, unix.AF_INET6}
	}
	return []uint8{unix.AF_INET6}
}

// diagOne is one request: struct nlmsghdr, then struct inet_diag_req_v2
// (linux/inet_diag.h) naming the socket exactly; the answer is struct
// inet_diag_msg (its idiag_state at byte 1, its ports at 4 and 6, its
// idiag_inode at 68), or an error message.
func diagOne(fd int, fam uint8, local, remote netip.AddrPort) (string, error) {
	const hdr, req = 16, 56
	b := make([]byte, hdr+req)
	binary.NativeEndian.PutUint32(b[0:], hdr+req)
	binary.NativeEndian.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(b[8:], 1)
	r := b[hdr:]
	r[0], r[1] = fam, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 0xffffffff) // any state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	putAddr(id[4:20], fam, local.Addr())
	putAddr(id[20:36], fam, remote.Addr())
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return "", err
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return "", err
	}
	buf = buf[:n]
	if len(buf) < hdr {
		return "", errors.New("sock_diag: a short answer")
	}
	switch typ := binary.NativeEndian.Uint16(buf[4:]); {
	case typ == unix.NLMSG_ERROR && len(buf) >= hdr+4:
		if e := int32(binary.NativeEndian.Uint32(buf[hdr:])); e != 0 {
			return "", unix.Errno(-e)
		}
		return "", errors.New("sock_diag: no socket")
	case typ != unix.SOCK_DIAG_BY_FAMILY || len(buf) < hdr+72:
		return "", errors.New("sock_diag: an answer of another kind")
	}
	// The kernel's lookup falls back to a listening socket on the port
	// when no connection matches: only the connection itself is taken.
	m := buf[hdr:]
	if m[1] == tcpListen || binary.BigEndian.Uint16(m[4:]) != local.Port() || binary.BigEndian.Uint16(m[6:]) != remote.Port() {
		return "", errors.New("sock_diag: no such connection")
	}
	return strconv.FormatUint(uint64(binary.NativeEndian.Uint32(m[68:])), 10), nil
}

// tcpListen is TCP_LISTEN among inet_diag_msg's idiag_state values.
const tcpListen = 10

// putAddr writes a into dst (16 bytes, network order) as family fam has it.
func putAddr(dst []byte, fam uint8, a netip.Addr) {
	if fam == unix.AF_INET {
		v4 := a.Unmap().As4()
		copy(dst, v4[:])
		return
	}
	v6 := a.As16()
	copy(dst, v6[:])
}
