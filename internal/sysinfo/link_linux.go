//go:build linux

package sysinfo

import (
	"os"
	"path/filepath"
	"strings"
)

// linkHeader reads the interface's ARP hardware type: ARPHRD_NONE (65534)
// is a layer-3 device with no link header; ARPHRD_ETHER (1) and
// ARPHRD_LOOPBACK (772) carry an Ethernet header.
func linkHeader(name string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", name, "type"))
	if err != nil {
		return 0, false
	}
	switch strings.TrimSpace(string(b)) {
	case "65534":
		return 0, true
	case "1", "772":
		return EthernetHeader, true
	}
	return 0, false
}
