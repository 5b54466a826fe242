//go:build linux

package sysinfo

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

func readPower() *result.Power {
	p := &result.Power{Hypervisor: hypervisor()}
	p.IdleDriver = CPUIdleDriver()
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
	if v, ok := CPULatencyHeld(); ok {
		p.LatencyRequestMicros = &v
	} else {
		p.Missing = append(p.Missing, "the CPU latency requests held: "+CPULatencyDev+" is root's to read")
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
