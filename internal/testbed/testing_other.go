//go:build !linux

package testbed

import "testing"

// LockTiming does nothing off Linux, where no testbed test runs.
func LockTiming(t testing.TB) {}
