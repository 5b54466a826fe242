//go:build !linux

package testbed

import (
	"context"
	"fmt"
	"runtime"
)

func unsupported() error {
	return fmt.Errorf("%w (GOOS=%s; network namespaces are Linux-only)", ErrUnsupported, runtime.GOOS)
}

// Available always reports ErrUnsupported off Linux.
func Available() error { return unsupported() }

// NewLink always fails with ErrUnsupported off Linux.
func NewLink(ctx context.Context, opts LinkOptions) (*Link, error) { return nil, unsupported() }

// CleanupStale always fails with ErrUnsupported off Linux.
func CleanupStale() error { return unsupported() }

// teardown is a no-op: no Link can exist off Linux.
func (l *Link) teardown() error { return nil }

// Do always fails with ErrUnsupported off Linux.
func (h *Host) Do(fn func() error) error { return unsupported() }

// NewSwitch always fails with ErrUnsupported off Linux.
func NewSwitch(ctx context.Context, opts SwitchOptions) (*Switch, error) { return nil, unsupported() }

// teardown is a no-op: no Switch can exist off Linux.
func (s *Switch) teardown() error { return nil }
