//go:build !linux

package dbtest

import "testing"

// closedPort is a loopback port nobody listened on a moment ago (the
// database tests run on Linux, where closedPort holds it).
func closedPort(t *testing.T) int { t.Helper(); return freePort(t) }
