//go:build linux

package hostchange

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// sysRoot is where sysfs is: a test points it at a tree of its own.
var sysRoot = "/sys"

func steerRPS(dev string, off int) (*result.Steering, func(*result.Steering), error) {
	if !devName(dev) {
		return nil, nil, fmt.Errorf("no interface to steer (%q): the connection's address is on none", dev)
	}
	files, _ := filepath.Glob(filepath.Join(sysRoot, "class/net", dev, "queues/rx-*/rps_cpus"))
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%s has no receive steering (no rps_cpus: a kernel built without RPS)", dev)
	}
	b, err := os.ReadFile(filepath.Join(sysRoot, "devices/system/cpu/online"))
	if err != nil {
		return nil, nil, fmt.Errorf("the CPUs online: %w", err)
	}
	online, err := sysinfo.ParseCPUList(string(b))
	if err != nil {
		return nil, nil, err
	}
	if !slices.Contains(online, off) {
		return nil, nil, fmt.Errorf("core %d is not online here (%s)", off, sysinfo.FormatCPUList(online))
	}
	to := slices.DeleteFunc(slices.Clone(online), func(c int) bool { return c == off })
	if len(to) == 0 {
		return nil, nil, errors.New("one CPU online: there is no other core to move the receive's work to")
	}
	before := make([]string, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", f, err)
		}
		before[i] = strings.TrimSpace(string(b))
	}
	st := &result.Steering{Interface: dev, Queues: len(files), OffCore: off, CPUs: sysinfo.FormatCPUList(to), Mask: cpuMask(to), Before: before[0]}
	g, err := startGuard(files, before)
	if err != nil {
		return nil, nil, err
	}
	restore := func(s *result.Steering) {
		// What the test ran with: another program (irqbalance, a
		// tuning daemon) may have written rps_cpus meanwhile.
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && !sameMask(string(b), st.Mask) {
				s.Error = fmt.Sprintf("another program changed %s's rps_cpus while the test ran (%s, not %s): the test did not run steered", dev, strings.TrimSpace(string(b)), st.Mask)
				break
			}
		}
		var errs []error
		for i, f := range files {
			errs = append(errs, os.WriteFile(f, []byte(before[i]+"\n"), 0))
		}
		if err := errors.Join(errs...); err != nil {
			s.Error = strings.TrimPrefix(s.Error+"; ", "; ") + "putting rps_cpus back: " + err.Error() + " (the guardian process writes them back as it ends)"
			g.abandon()
			return
		}
		s.Restored = true
		g.release()
	}
	for _, f := range files {
		if err := os.WriteFile(f, []byte(st.Mask+"\n"), 0); err != nil {
			var tmp result.Steering
			restore(&tmp)
			if errors.Is(err, fs.ErrPermission) {
				return nil, nil, fmt.Errorf("writing %s needs root: run narrows as root (the agent, on its host)", f)
			}
			return nil, nil, fmt.Errorf("writing %s: %w", f, err)
		}
	}
	return st, restore, nil
}

// sameMask says whether two CPU masks as rps_cpus reads and is written
// ("00000000,00000002", "2") are the same.
func sameMask(a, b string) bool {
	trim := func(m string) string {
		return strings.TrimLeft(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(m)), ",", ""), "0")
	}
	return trim(a) == trim(b)
}
