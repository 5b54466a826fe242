//go:build !unix && !windows

package sysinfo

import "time"

func cpuTime() (time.Duration, error) { return 0, ErrUnavailable }
