//go:build !linux && !windows

package sysinfo

import (
	"errors"
	"runtime"

	"github.com/narrows/narrows/internal/result"
)

func coreTimes() ([]CoreTime, error) {
	return nil, errors.New("per-core times are read on Linux and Windows, not " + runtime.GOOS)
}

func nicInterrupts(string) func(int, float64) []result.CoreIRQ {
	return func(int, float64) []result.CoreIRQ { return nil }
}
