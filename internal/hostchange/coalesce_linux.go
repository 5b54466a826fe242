//go:build linux

package hostchange

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// coalescingField is one field a change touches, in struct
// ethtool_coalesce, and its least.
type coalescingField struct {
	name  string
	field func(*sysinfo.Coalescing) *uint32
	least func(uint32) uint32
}

var coalescingFields = []coalescingField{
	{"rx-usecs", func(c *sysinfo.Coalescing) *uint32 { return &c.RxUsecs }, func(uint32) uint32 { return 0 }},
	{"rx-frames", func(c *sysinfo.Coalescing) *uint32 { return &c.RxFrames }, func(v uint32) uint32 { return min(v, 1) }},
	{"adaptive-rx", func(c *sysinfo.Coalescing) *uint32 { return &c.AdaptiveRx }, func(uint32) uint32 { return 0 }},
}

func leastCoalescing(dev string) (*result.CoalescingChange, func(*result.CoalescingChange), error) {
	if !devName(dev) {
		return nil, nil, fmt.Errorf("no interface to change (%q): the connection's address is on none", dev)
	}
	cur, err := sysinfo.ReadCoalescing(dev)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return nil, nil, fmt.Errorf("%s keeps no interrupt coalescing (its driver has none, as a veth or a bridge): nothing to try", dev)
		}
		return nil, nil, fmt.Errorf("reading %s's interrupt coalescing: %w", dev, err)
	}
	ch := &result.CoalescingChange{Interface: dev}
	set := cur
	for _, f := range coalescingFields {
		if v := *f.field(&cur); f.least(v) != v {
			if ch.Before == nil {
				ch.Before, ch.Set = map[string]int64{}, map[string]int64{}
			}
			ch.Before[f.name], ch.Set[f.name] = int64(v), int64(f.least(v))
			*f.field(&set) = f.least(v)
		}
	}
	if ch.Set == nil {
		ch.Restored = true
		return ch, func(*result.CoalescingChange) {}, nil
	}
	args := []string{"coalescing", dev}
	for k, v := range ch.Before {
		args = append(args, k+"="+strconv.FormatInt(v, 10))
	}
	g, err := startSelfGuard(args)
	if err != nil {
		return nil, nil, err
	}
	restore := func(c *result.CoalescingChange) {
		// What the test ran at: another program (tuned, NetworkManager,
		// a driver's own reset) may have set it again meanwhile.
		if now, err := sysinfo.ReadCoalescing(dev); err == nil {
			if moved := changedFrom(now, ch.Set); moved != "" {
				c.Error = "another program changed " + dev + "'s coalescing while the test ran (" + moved + "): the test did not run at its least"
			}
		}
		if err := putBackCoalescing(dev, ch.Before); err != nil {
			c.Error = strings.TrimPrefix(c.Error+"; ", "; ") + "putting " + dev + "'s coalescing back: " + err.Error() + " (the guardian process puts it back as it ends)"
			g.abandon()
			return
		}
		c.Restored = true
		g.release()
	}
	if err := sysinfo.WriteCoalescing(dev, set); err != nil {
		g.release() // nothing was changed
		switch {
		case errors.Is(err, unix.EOPNOTSUPP):
			return nil, nil, fmt.Errorf("%s's driver does not let its interrupt coalescing change (%s)", dev, result.CoalescingWords(ch.Set))
		case errors.Is(err, unix.EPERM):
			return nil, nil, fmt.Errorf("changing %s's interrupt coalescing needs root: run narrows as root (the agent, on its host)", dev)
		}
		return nil, nil, fmt.Errorf("setting %s's interrupt coalescing to %s: %w", dev, result.CoalescingWords(ch.Set), err)
	}
	return ch, restore, nil
}

// putBackCoalescing writes the fields in before back to dev, the others
// as they are now.
func putBackCoalescing(dev string, before map[string]int64) error {
	c, err := sysinfo.ReadCoalescing(dev)
	if err != nil {
		return err
	}
	for _, f := range coalescingFields {
		if v, ok := before[f.name]; ok {
			*f.field(&c) = uint32(v)
		}
	}
	return sysinfo.WriteCoalescing(dev, c)
}

// changedFrom names the fields of now that are not as set: "rx-frames
// 16 where 1 was set"; "" when all are.
func changedFrom(now sysinfo.Coalescing, set map[string]int64) string {
	var parts []string
	for _, f := range coalescingFields {
		if v, ok := set[f.name]; ok && int64(*f.field(&now)) != v {
			parts = append(parts, fmt.Sprintf("%s %d where %d was set", f.name, *f.field(&now), v))
		}
	}
	return strings.Join(parts, ", ")
}

// undoFrom is the guardian's undo, as its arguments name it:
// "coalescing DEV field=value…" or "offloads DEV name…".
func undoFrom(args []string) error {
	if len(args) >= 2 {
		switch args[0] {
		case "coalescing":
			return undoCoalescing(args)
		case "offloads":
			return offloadsOff(args[1], args[2:])
		}
	}
	return fmt.Errorf("nothing to put back: %q", args)
}

// undoCoalescing is the guardian's undo of a coalescing change.
func undoCoalescing(args []string) error {
	before := map[string]int64{}
	for _, a := range args[2:] {
		k, v, ok := strings.Cut(a, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n < 0 || n > 1<<32-1 {
			return fmt.Errorf("not a field=value: %q", a)
		}
		before[k] = n
	}
	return putBackCoalescing(args[1], before)
}
