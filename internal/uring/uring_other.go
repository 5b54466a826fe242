//go:build !linux

package uring

// Options shape a ring (see the Linux build).
type Options struct{ SingleIssuer, Raw bool }

// Ring is unavailable off Linux; New always fails.
type Ring struct{}

// New returns ErrUnavailable: io_uring is a Linux interface.
func New(entries uint32, opts Options) (*Ring, error) { return nil, ErrUnavailable }

// Close does nothing.
func (r *Ring) Close() error { return nil }

// Entries is zero.
func (r *Ring) Entries() uint32 { return 0 }

// InFlight is zero.
func (r *Ring) InFlight() uint32 { return 0 }

// SQE is always nil.
func (r *Ring) SQE() *SQE { return nil }

// Submit fails.
func (r *Ring) Submit(wait uint32) (int, error) { return 0, ErrUnavailable }

// Reap finds nothing.
func (r *Ring) Reap(buf []CQE) int { return 0 }

// Supports is always false.
func (r *Ring) Supports(ops ...uint8) (bool, error) { return false, ErrUnavailable }

// SingleIssuer is false.
func (r *Ring) SingleIssuer() bool { return false }

// Addr is zero: there is no ring to hand an address to.
func Addr(b []byte) uint64 { return 0 }
