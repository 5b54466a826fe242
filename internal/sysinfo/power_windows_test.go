//go:build windows

package sysinfo

import (
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestReadPower: the active scheme, where powrprof gives one, named with
// its GUID; what fails leaves its field empty.
func TestReadPower(t *testing.T) {
	p := ReadPower()
	t.Logf("scheme %q, GUID %q, hypervisor %q", p.Scheme, p.SchemeGUID, p.Hypervisor)
	if k, err := registry.OpenKey(registry.LOCAL_MACHINE, `HARDWARE\DESCRIPTION\System\BIOS`, registry.QUERY_VALUE); err != nil {
		t.Logf("the firmware's names: %v", err)
	} else {
		v, _, verr := k.GetStringValue("SystemManufacturer")
		m, _, merr := k.GetStringValue("SystemProductName")
		k.Close()
		t.Logf("the firmware's names: SystemManufacturer %q (%v), SystemProductName %q (%v)", v, verr, m, merr)
	}
	g, err := activeScheme()
	if err != nil {
		t.Logf("PowerGetActiveScheme failed here: %v", err)
		if p.Scheme != "" || p.SchemeGUID != "" || len(p.Missing) != 1 || !strings.Contains(p.Missing[0], "power plan") {
			t.Errorf("scheme %q, GUID %q, missing %q when PowerGetActiveScheme fails; want both empty and the plan said missing", p.Scheme, p.SchemeGUID, p.Missing)
		}
		return
	}
	t.Logf("PowerGetActiveScheme: %v", g)
	if !guidRE.MatchString(p.SchemeGUID) || p.Scheme == "" {
		t.Errorf("scheme %q, GUID %q; want a name and a GUID", p.Scheme, p.SchemeGUID)
	}
}

// TestSchemeNames: Windows' own schemes by their English names, as
// powercfg writes the GUIDs.
func TestSchemeNames(t *testing.T) {
	high := windows.GUID{Data1: 0x8c5e7fda, Data2: 0xe8bf, Data3: 0x4a96, Data4: [8]byte{0x9a, 0x85, 0xa6, 0xe2, 0x3a, 0x8c, 0x63, 0x5c}}
	if s := guidString(high); s != "8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c" {
		t.Errorf("guidString: %s", s)
	}
	if n := schemeName(high); n != "High performance" {
		t.Errorf("schemeName(%s) = %q, want High performance", guidString(high), n)
	}
	for g := range schemeNames {
		if !guidRE.MatchString(g) {
			t.Errorf("scheme %q is not written as guidString writes", g)
		}
	}
}
