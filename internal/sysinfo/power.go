package sysinfo

import (
	"runtime"
	"strings"

	"github.com/narrows/narrows/internal/result"
)

// ReadPower is what decides how deeply this host's idle CPUs sleep and how
// fast they wake, as the OS tells it: the hypervisor, Linux's cpuidle
// driver, governor and states, cpufreq's governor, the haltpoll driver's
// parameters and the CPU latency requests held now; Windows' active power
// scheme. Empty fields are what the OS does not tell.
func ReadPower() *result.Power {
	p := readPower()
	p.OS = runtime.GOOS
	return p
}

// hypervisorOf names a virtual machine's host from the firmware's vendor
// and product names (Linux's DMI, Windows' BIOS keys): "" when they name
// none. Hyper-V's guests say "Microsoft Corporation" and "Virtual
// Machine" (a Surface says Microsoft too).
func hypervisorOf(vendor, product string) string {
	v := strings.ToLower(vendor + " " + product)
	switch {
	case strings.Contains(v, "vmware"):
		return "VMware"
	case strings.Contains(v, "microsoft") && strings.Contains(v, "virtual"):
		return "Hyper-V"
	case strings.Contains(v, "amazon ec2"):
		return "KVM (Amazon EC2)"
	case strings.Contains(v, "google"):
		return "KVM (Google Compute Engine)"
	case strings.Contains(v, "qemu") || strings.Contains(v, "kvm"):
		return "KVM"
	case strings.Contains(v, "xen"):
		return "Xen"
	}
	return ""
}
