//go:build !linux

package sysinfo

func readCPULimit() (CPULimit, error) { return CPULimit{}, ErrUnavailable }
