//go:build !linux

package sysinfo

// linkHeader: other systems are not asked; the caller takes Ethernet.
func linkHeader(string) (int64, bool) { return 0, false }
