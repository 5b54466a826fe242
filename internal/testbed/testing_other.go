//go:build !linux

package testbed

import "testing"

// Share does nothing off Linux, where no testbed test runs.
func Share(t testing.TB, n int) {}

// LockTiming does nothing off Linux, where no testbed test runs.
func LockTiming(t testing.TB) {}

// Hold does nothing off Linux, where no testbed test runs.
func Hold(n int) (release func(), err error) { return func() {}, nil }
