package sysinfo

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A /proc/stat as Linux 6 writes it (two CPUs), and ones it never writes.
func TestParseProcStat(t *testing.T) {
	stat := "cpu  300 10 200 5000 20 3 40 7 0 0\n" +
		"cpu0 100 5 100 2500 10 1 20 3 0 0\n" +
		"cpu1 200 5 100 2500 10 2 20 4 0 0\n" +
		"intr 12345 0 0\nctxt 99\nsoftirq 1 2 3\n"
	c, err := parseProcStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 2 || c[0].ID != 0 {
		t.Fatalf("%d cores, want 2", len(c))
	}
	tick := 10 * time.Millisecond
	want := coreTime{ID: 1, User: 205 * tick, System: 100 * tick, Idle: 2510 * tick, IRQ: 2 * tick, SoftIRQ: 20 * tick, Steal: 4 * tick}
	if c[1] != want {
		t.Errorf("cpu1 %+v, want %+v", c[1], want)
	}
	for _, bad := range []string{"", "cpu 1 2 3\n", "cpu0 1 2 3\n", "cpu0 1 2 3 4 5 6 7 x\n", "cpu0 1 2 3 4 5 6 7 -8\n", "cpux 1 2 3 4 5 6 7 8\n"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		} else if strings.ContainsAny(err.Error(), "\n") {
			t.Errorf("%q: %q is not one line", bad, err)
		}
	}
}

// TestCoreIDs: Linux lists only the CPUs online, so the busiest core is
// named by its own number, not its place in the list; a CPU that came or
// went between two readings gives no load.
func TestCoreIDs(t *testing.T) {
	read := func(stat string) []coreTime {
		c, err := parseProcStat([]byte(stat))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := read("cpu0 100 0 0 900 0 0 0 0\ncpu2 100 0 0 900 0 0 0 0\ncpu3 100 0 0 900 0 0 0 0\n")
	after := read("cpu0 110 0 0 990 0 0 0 0\ncpu2 110 0 30 960 0 0 0 0\ncpu3 110 0 0 990 0 0 0 0\n")
	l := coreLoadBetween(before, after, "linux")
	if l == nil || l.Core != 2 || l.Cores != 3 {
		t.Fatalf("%+v: want core 2 of 3", l)
	}
	if err := l.Check(); err != nil {
		t.Errorf("core 2 of 3 CPUs online: %v", err)
	}
	gone := read("cpu0 120 0 0 1080 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0\ncpu3 120 0 0 1080 0 0 0 0\n")
	if coreLoadBetween(after, gone, "linux") != nil {
		t.Error("CPU 2 went and CPU 1 came, and a load was still given")
	}
}

// A /proc/interrupts as Linux 6 writes it on a VM with CPU 1 offline:
// the columns are the CPUs online, named by number.
func TestParseInterrupts(t *testing.T) {
	stat := "           CPU0       CPU2       \n" +
		" 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n" +
		" 38:          0      17084 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n" +
		" 39:      12746          3 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\n" +
		" 40:          5          0 IR-PCI-MSI 524288-edge      ehci_hcd:usb1, uhci_hcd:usb2\n" +
		"NMI:          0          0   Non-maskable interrupts\n" +
		"LOC:  268979538  254928271   Local timer interrupts\n" +
		"ERR:          0\n"
	m, err := parseInterrupts([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 4 {
		t.Fatalf("%d numbered interrupts, want 4 (LOC, NMI and ERR are not a device's): %v", len(m), m)
	}
	if l := m[38]; l.name != "virtio2-input.0" || l.counts[2] != 17084 || l.counts[0] != 0 {
		t.Errorf("IRQ 38: %+v", l)
	}
	if l := m[40]; l.name != "ehci_hcd:usb1, uhci_hcd:usb2" {
		t.Errorf("IRQ 40's actions: %q", l.name)
	}
	for _, bad := range []string{"", "CPU0 X1\n", " 24: 1\n", "           CPU0       CPU1\n 24: 1 x IO-APIC 5-edge a\n"} {
		if _, err := parseInterrupts([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestNICIRQs: each interface of this machine with a device behind it
// names interrupts /proc/interrupts lists; a virtual one (loopback) none.
func TestNICIRQs(t *testing.T) {
	if irqs := nicIRQs("lo"); len(irqs) != 0 {
		t.Errorf("loopback has interrupts %v", irqs)
	}
	for _, bad := range []string{"", "..", "../../etc", "eth0/../.."} {
		if irqs := nicIRQs(bad); len(irqs) != 0 {
			t.Errorf("%q: %v", bad, irqs)
		}
	}
	all, err := readInterrupts()
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := filepath.Glob("/sys/class/net/*/device")
	for _, d := range devs {
		dev := filepath.Base(filepath.Dir(d))
		irqs := nicIRQs(dev)
		if len(irqs) == 0 {
			t.Errorf("%s has a device and no interrupts", dev)
		}
		for _, n := range irqs {
			if _, ok := all[n]; !ok {
				t.Errorf("%s: IRQ %d is not in /proc/interrupts", dev, n)
			}
			t.Logf("%s: IRQ %d %s", dev, n, all[n].name)
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"virtio2-input.0", 64, "virtio2-input.0"}, {"abcdef", 3, "abc"}, {"ééé", 3, "é"}, {"ééé", 4, "éé"}} {
		if got := cut(c.s, c.n); got != c.want {
			t.Errorf("cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
