//go:build linux

package hostchange

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

func offloadsOn(dev, role string) (*result.OffloadChange, func(*result.OffloadChange), error) {
	if !devName(dev) {
		return nil, nil, fmt.Errorf("no interface to change (%q): the connection's address is on none", dev)
	}
	names, ok := result.OffloadsUsed[role]
	if !ok {
		return nil, nil, fmt.Errorf("no part %q in a stream", role)
	}
	ch := &result.OffloadChange{Role: role, Interface: dev}
	for _, n := range names {
		on, err := sysinfo.ReadOffload(dev, n)
		switch {
		case errors.Is(err, unix.EOPNOTSUPP):
			return nil, nil, fmt.Errorf("%s's driver does not say whether %s is on: nothing to try", dev, n)
		case err != nil:
			return nil, nil, fmt.Errorf("reading %s's %s: %w", dev, n, err)
		case !on:
			ch.On = append(ch.On, n)
		}
	}
	if len(ch.On) == 0 {
		ch.Restored = true
		return ch, func(*result.OffloadChange) {}, nil
	}
	g, err := startSelfGuard(append([]string{"offloads", dev}, ch.On...))
	if err != nil {
		return nil, nil, err
	}
	restore := func(c *result.OffloadChange) {
		// What the test ran with: another program (tuned, NetworkManager,
		// a driver's reset) may have turned one off again meanwhile.
		var moved []string
		for _, n := range ch.On {
			if on, err := sysinfo.ReadOffload(dev, n); err == nil && !on {
				moved = append(moved, n)
			}
		}
		if len(moved) > 0 {
			c.Error = "another program turned " + dev + "'s " + strings.Join(moved, ", ") + " off while the test ran: the test did not run with it on"
		}
		if err := offloadsOff(dev, ch.On); err != nil {
			c.Error = strings.TrimPrefix(c.Error+"; ", "; ") + "turning " + dev + "'s " + strings.Join(ch.On, ", ") + " off again: " + err.Error() +
				" (the guardian process turns them off as it ends)"
			g.abandon()
			return
		}
		c.Restored = true
		g.release()
	}
	for _, n := range ch.On {
		err := sysinfo.WriteOffload(dev, n, true)
		if err == nil {
			if on, rerr := sysinfo.ReadOffload(dev, n); rerr == nil && !on {
				// The kernel keeps it off while a feature it needs is
				// (TSO without scatter-gather or checksumming).
				err = fmt.Errorf("the kernel keeps it off while a feature it needs is off (TSO needs scatter-gather and transmit checksums: ethtool -K %s sg on tx on, then try again)", dev)
			}
		}
		if err != nil {
			var tmp result.OffloadChange
			restore(&tmp)
			switch {
			case errors.Is(err, unix.EOPNOTSUPP):
				return nil, nil, fmt.Errorf("%s's driver does not let %s change", dev, n)
			case errors.Is(err, unix.EPERM):
				return nil, nil, fmt.Errorf("turning %s's %s on needs root: run narrows as root (the agent, on its host)", dev, n)
			}
			return nil, nil, fmt.Errorf("turning %s's %s on: %w", dev, n, err)
		}
	}
	return ch, restore, nil
}

// offloadsOff turns dev's offloads names off again: what a try turned on.
// Only the names a try may change are taken (the guardian's arguments).
func offloadsOff(dev string, names []string) error {
	var errs []error
	for _, n := range names {
		if !slices.Contains(result.OffloadsUsed[result.RoleSending], n) && !slices.Contains(result.OffloadsUsed[result.RoleReceiving], n) {
			errs = append(errs, fmt.Errorf("not an offload a try changes: %q", n))
			continue
		}
		if err := sysinfo.WriteOffload(dev, n, false); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}
