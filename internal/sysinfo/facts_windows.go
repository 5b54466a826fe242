//go:build windows

package sysinfo

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"

	"github.com/narrows/narrows/internal/result"
)

// x/sys/windows has no wrapper for GlobalMemoryStatusEx.
var procGlobalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// memoryStatusEx is MEMORYSTATUSEX.
type memoryStatusEx struct {
	Length               uint32
	MemoryLoad           uint32
	TotalPhys            uint64
	AvailPhys            uint64
	TotalPageFile        uint64
	AvailPageFile        uint64
	TotalVirtual         uint64
	AvailVirtual         uint64
	AvailExtendedVirtual uint64
}

func hostFacts(f *result.Facts) {
	v := windows.RtlGetVersion()
	f.Kernel = fmt.Sprintf("%d.%d.%d", v.MajorVersion, v.MinorVersion, v.BuildNumber)
	if k, err := registry.OpenKey(registry.LOCAL_MACHINE, `HARDWARE\DESCRIPTION\System\CentralProcessor\0`, registry.QUERY_VALUE); err == nil {
		f.CPU, _, _ = k.GetStringValue("ProcessorNameString")
		k.Close()
	}
	if f.CPU == "" {
		f.Missing = append(f.Missing, "cpu model: the registry names none")
	}
	m := memoryStatusEx{Length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if procGlobalMemoryStatusEx.Find() == nil {
		if r, _, _ := procGlobalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m))); r != 0 {
			f.MemoryBytes = int64(m.TotalPhys)
		}
	}
	if f.MemoryBytes == 0 {
		f.Missing = append(f.Missing, "memory: GlobalMemoryStatusEx failed")
	}
	// The receive window's auto-tuning level has no API (netsh reads it
	// from the TCP/IP stack's private store), and narrows does not spawn
	// processes to learn it.
	f.Missing = append(f.Missing, "tcp: receive window auto-tuning level (no API; `netsh interface tcp show global` tells it)")
}

func nicFacts(n *result.NIC) (missing []string) {
	a, err := adapter(n.Name)
	if err != nil || a == nil {
		return []string{n.Name + ": speed, description (GetAdaptersAddresses does not list it)"}
	}
	n.Driver = windows.UTF16PtrToString(a.Description)
	if a.Mtu != 0 && a.Mtu != ^uint32(0) {
		n.MTU = int(a.Mtu)
	}
	if s := a.TransmitLinkSpeed; s != 0 && s != ^uint64(0) {
		n.SpeedMbps = int64(s / 1e6)
	}
	return []string{n.Name + ": driver version, firmware, offloads, interrupt coalescing (Windows tells them only through WMI or the adapter's advanced properties)"}
}

// adapter finds the adapter whose friendly name is name (Go's
// net.Interface names a Windows interface by it).
func adapter(name string) (*windows.IpAdapterAddresses, error) {
	size := uint32(16 << 10)
	for i := 0; i < 3; i++ {
		buf := make([]byte, size)
		first := (*windows.IpAdapterAddresses)(unsafe.Pointer(&buf[0]))
		err := windows.GetAdaptersAddresses(windows.AF_UNSPEC, windows.GAA_FLAG_INCLUDE_PREFIX, 0, first, &size)
		if err == windows.ERROR_BUFFER_OVERFLOW {
			continue
		}
		if err != nil {
			return nil, err
		}
		for a := first; a != nil; a = a.Next {
			if windows.UTF16PtrToString(a.FriendlyName) == name {
				return a, nil
			}
		}
		return nil, nil
	}
	return nil, windows.ERROR_BUFFER_OVERFLOW
}
