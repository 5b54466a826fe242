//go:build windows

package sysinfo

import (
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"

	"github.com/narrows/narrows/internal/result"
)

// x/sys/windows has no wrappers for the power scheme.
var (
	powrprof                  = windows.NewLazySystemDLL("powrprof.dll")
	procPowerGetActiveScheme  = powrprof.NewProc("PowerGetActiveScheme")
	procPowerReadFriendlyName = powrprof.NewProc("PowerReadFriendlyName")
)

// schemeNames are Windows' own schemes, named in English whatever the
// system's language (PowerReadFriendlyName answers in it).
var schemeNames = map[string]string{
	"381b4222-f694-41f0-9685-ff5bb260df2e": "Balanced",
	"8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c": "High performance",
	"a1841308-3541-4fab-bc81-f71556f20b4a": "Power saver",
	"e9a42b02-d5df-448d-aa00-03f14749eb61": "Ultimate Performance",
}

// readPower on Windows: the active power scheme, whose processor idle
// and performance settings decide how deeply an idle CPU sleeps, and the
// hypervisor the firmware names.
func readPower() *result.Power {
	p := &result.Power{Hypervisor: hypervisor()}
	if g, err := activeScheme(); err == nil {
		p.SchemeGUID = guidString(g)
		p.Scheme = schemeName(g)
	} else {
		p.Missing = append(p.Missing, "power plan: "+err.Error())
	}
	return p
}

// activeScheme is PowerGetActiveScheme's answer.
func activeScheme() (windows.GUID, error) {
	if err := procPowerGetActiveScheme.Find(); err != nil {
		return windows.GUID{}, err
	}
	var g *windows.GUID // LocalAlloc'd by powrprof
	r, _, _ := procPowerGetActiveScheme.Call(0, uintptr(unsafe.Pointer(&g)))
	if r != 0 {
		return windows.GUID{}, fmt.Errorf("PowerGetActiveScheme: %w", windows.Errno(r))
	}
	if g == nil {
		return windows.GUID{}, fmt.Errorf("PowerGetActiveScheme: no scheme")
	}
	out := *g
	windows.LocalFree(windows.Handle(unsafe.Pointer(g))) //nolint:errcheck
	return out, nil
}

// guidString is g as powercfg shows it: lower case, no braces.
func guidString(g windows.GUID) string {
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x", g.Data1, g.Data2, g.Data3, g.Data4[:2], g.Data4[2:])
}

// schemeName names a scheme of Windows' own in English, another by its
// friendly name, else by its GUID.
func schemeName(g windows.GUID) string {
	s := guidString(g)
	if n, ok := schemeNames[s]; ok {
		return n
	}
	if n := friendlyName(g); n != "" {
		return n
	}
	return s
}

// friendlyName is PowerReadFriendlyName's name for scheme g, "" when it
// has none: asked once for its size in bytes, then for the UTF-16 name.
func friendlyName(g windows.GUID) string {
	if procPowerReadFriendlyName.Find() != nil {
		return ""
	}
	var size uint32
	r, _, _ := procPowerReadFriendlyName.Call(0, uintptr(unsafe.Pointer(&g)), 0, 0, 0, uintptr(unsafe.Pointer(&size)))
	if r != 0 || size < 2 || size > 1<<16 {
		return ""
	}
	buf := make([]uint16, (size+1)/2)
	r, _, _ = procPowerReadFriendlyName.Call(0, uintptr(unsafe.Pointer(&g)), 0, 0, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)))
	if r != 0 {
		return ""
	}
	return strings.TrimSpace(windows.UTF16ToString(buf))
}

// hypervisor names the virtual machine's host from the firmware's system
// vendor and product, which Windows copies to the registry at boot.
func hypervisor() string {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `HARDWARE\DESCRIPTION\System\BIOS`, registry.QUERY_VALUE)
	if err != nil {
		return ""
	}
	defer k.Close()
	vendor, _, _ := k.GetStringValue("SystemManufacturer")
	product, _, _ := k.GetStringValue("SystemProductName")
	return hypervisorOf(vendor, product)
}
