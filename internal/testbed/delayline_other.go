//go:build !linux

package testbed

import "context"

type delayLineImpl struct{}

// DelayLineAvailable always reports ErrUnsupported off Linux.
func DelayLineAvailable() error { return unsupported() }

// NewDelayLine always fails with ErrUnsupported off Linux: it needs
// network namespaces and TUN devices.
func NewDelayLine(ctx context.Context, opts DelayLineOptions) (*DelayLine, error) {
	return nil, unsupported()
}

// Stats is zero: no DelayLine can exist off Linux.
func (l *DelayLine) Stats() DelayLineStats { return DelayLineStats{} }

// Realtime is false: no DelayLine can exist off Linux.
func (l *DelayLine) Realtime() bool { return false }

// Err is nil: no DelayLine can exist off Linux.
func (l *DelayLine) Err() error { return nil }

// close is a no-op: no DelayLine can exist off Linux.
func (*delayLineImpl) close([]*Host) error { return nil }

// Awake is ErrUnsupported: no DelayLine can exist off Linux.
func (l *DelayLine) Awake() error { return unsupported() }
