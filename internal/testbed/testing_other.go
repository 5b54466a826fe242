//go:build !linux

package testbed

import "testing"

// Slots is how many shares of the machine timing tests divide (Share).
const Slots = 4

// Share does nothing off Linux, where no testbed test runs.
func Share(t testing.TB, n int) {}

// LockTiming does nothing off Linux, where no testbed test runs.
func LockTiming(t testing.TB) {}
