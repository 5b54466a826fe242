//go:build !linux && !windows

package sysinfo

import (
	"errors"
	"runtime"
)

func coreTimes() ([]coreTime, error) {
	return nil, errors.New("per-core times are read on Linux and Windows, not " + runtime.GOOS)
}
