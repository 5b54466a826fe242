package sysinfo

import "testing"

// TestHypervisorNames: the firmware's words as hypervisors' guests give
// them.
func TestHypervisorNames(t *testing.T) {
	for _, c := range []struct{ vendor, product, want string }{
		{"Microsoft Corporation", "Virtual Machine", "Hyper-V"},
		{"Microsoft Corporation", "Surface Laptop 5", ""},
		{"VMware, Inc.", "VMware7,1", "VMware"},
		{"QEMU", "Standard PC (Q35 + ICH9, 2009)", "KVM"},
		{"Red Hat", "KVM", "KVM"},
		{"Amazon EC2", "m5.large", "KVM (Amazon EC2)"},
		{"Google", "Google Compute Engine", "KVM (Google Compute Engine)"},
		{"Xen", "HVM domU", "Xen"},
		{"Dell Inc.", "PowerEdge R650", ""},
		{"", "", ""},
	} {
		if got := hypervisorOf(c.vendor, c.product); got != c.want {
			t.Errorf("hypervisorOf(%q, %q) = %q, want %q", c.vendor, c.product, got, c.want)
		}
	}
}
