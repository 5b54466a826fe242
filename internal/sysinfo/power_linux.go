//go:build linux

package sysinfo

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

const cpuidleDir = "/sys/devices/system/cpu/cpuidle"

func readPower() *result.Power {
	p := &result.Power{Hypervisor: hypervisor()}
	p.IdleDriver = readTrim(filepath.Join(cpuidleDir, "current_driver"))
	if p.IdleDriver == "" {
		if _, err := os.Stat(cpuidleDir); err == nil {
			p.IdleDriver = "none"
		}
	}
	p.IdleGovernor = readTrim(filepath.Join(cpuidleDir, "current_governor"))
	if p.IdleGovernor == "" {
		p.IdleGovernor = readTrim(filepath.Join(cpuidleDir, "current_governor_ro"))
	}
	states, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cpuidle/state*")
	for _, s := range states {
		st := result.IdleState{Name: readTrim(filepath.Join(s, "name"))}
		st.ExitLatencyUsec, _ = strconv.ParseInt(readTrim(filepath.Join(s, "latency")), 10, 64)
		st.Disabled = readTrim(filepath.Join(s, "disable")) == "1"
		if st.Name != "" {
			p.IdleStates = append(p.IdleStates, st)
		}
	}
	p.FreqGovernor = readTrim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
	if params, _ := filepath.Glob("/sys/module/haltpoll/parameters/*"); len(params) > 0 {
		p.HaltPoll = map[string]string{}
		for _, f := range params {
			p.HaltPoll[filepath.Base(f)] = readTrim(f)
		}
	}
	// Reading the request file gives the value every CPU is held to now
	// (2,000,000,000 µs: no request); only root may open it.
	if f, err := os.Open("/dev/cpu_dma_latency"); err == nil {
		var b [4]byte
		if n, _ := f.Read(b[:]); n == 4 {
			v := int64(int32(binary.NativeEndian.Uint32(b[:])))
			if v >= 2_000_000_000 {
				v = -1
			}
			p.LatencyRequestMicros = &v
		}
		f.Close()
	}
	return p
}

// hypervisor names the virtual machine's host from what Linux shows
// without privilege: the DMI vendor and product, Xen's own file, the
// clock source (kvm-clock, hyperv_clocksource_*), and cpuinfo's
// "hypervisor" flag (a VM whose host is not told: "unknown").
func hypervisor() string {
	if h := hypervisorOf(readTrim("/sys/class/dmi/id/sys_vendor"), readTrim("/sys/class/dmi/id/product_name")); h != "" {
		return h
	}
	if t := readTrim("/sys/hypervisor/type"); t == "xen" {
		return "Xen"
	} else if t != "" {
		return t
	}
	switch cs := readTrim("/sys/devices/system/clocksource/clocksource0/available_clocksource"); {
	case strings.Contains(cs, "kvm-clock"):
		return "KVM"
	case strings.Contains(cs, "hyperv"):
		return "Hyper-V"
	case strings.Contains(cs, "xen"):
		return "Xen"
	}
	if strings.Contains(" "+procField("/proc/cpuinfo", "flags")+" ", " hypervisor ") {
		return "unknown"
	}
	return ""
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
