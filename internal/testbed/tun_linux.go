//go:build linux

package testbed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

const tunClone = "/dev/net/tun"

// openTUN creates a TUN device (IFF_TUN|IFF_NO_PI: bare IP packets, no
// packet-information prefix) named name inside h's namespace and returns
// its file descriptor, non-blocking (the forwarder waits in ppoll). The
// device lives as long as the descriptor: it is not persistent, so when
// this process exits, even killed, the kernel removes it.
//
// The namespace is fixed when /dev/net/tun is opened (tun_chr_open takes
// the opener's network namespace, and TUNSETIFF registers the device in
// it), so the open happens on a thread inside h's namespace. The device
// never appears in the root namespace.
func openTUN(h *Host, name string) (int, error) {
	tfd := -1
	err := h.Do(func() error {
		// Devices made from here on in this namespace start without IPv6,
		// so the kernel sends nothing (router solicitations, MLD) through
		// the line but the tests' own packets.
		if err := os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1\n"), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("testbed: disabling IPv6 in %s: %w", h.NS, err)
		}
		fd, err := unix.Open(tunClone, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("testbed: opening %s (CONFIG_TUN?): %w", tunClone, err)
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("testbed: TUN name %q: %w", name, err)
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("testbed: TUNSETIFF %s in %s: %w", name, h.NS, err)
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return fmt.Errorf("testbed: non-blocking %s: %w", name, err)
		}
		tfd = fd
		return nil
	})
	return tfd, err
}

var tunAvailable = sync.OnceValue(probeTUN)

// DelayLineAvailable reports why a DelayLine cannot be made here (what
// Available reports, or no TUN devices), nil if it can. The first call
// really creates a TUN device in a throwaway namespace; the answer is
// cached for the life of the process.
func DelayLineAvailable() error {
	if err := Available(); err != nil {
		return err
	}
	return tunAvailable()
}

func probeTUN() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*cmdTimeout)
	defer cancel()
	h := &Host{Name: "probe", NS: fmt.Sprintf("%s%d-tunprobe", NamePrefix, os.Getpid())}
	if _, err := run(ctx, "ip", "netns", "add", h.NS); err != nil {
		return fmt.Errorf("testbed: cannot create a network namespace: %w", err)
	}
	defer deleteNS(h.NS) //nolint:errcheck // best effort; CleanupStale catches the rest
	fd, err := openTUN(h, "probe0")
	if err != nil {
		return fmt.Errorf("testbed: cannot create a TUN device: %w", err)
	}
	// The device must really be there, in that namespace.
	_, lerr := run(ctx, "ip", "-n", h.NS, "link", "show", "probe0")
	unix.Close(fd)
	if lerr != nil {
		return fmt.Errorf("testbed: TUN device not found in its namespace: %w", lerr)
	}
	return nil
}
