//go:build !linux && !windows

package sysinfo

import "time"

func threadCPUTime() (time.Duration, error) { return 0, ErrUnavailable }
