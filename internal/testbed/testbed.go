package testbed

import (
	"context"
	"errors"
	"net/netip"
	"os/exec"
	"sync"
	"time"
)

// ErrUnsupported is wrapped by every constructor on platforms without
// network namespaces.
var ErrUnsupported = errors.New("testbed: not supported on this platform")

// NamePrefix starts the name of every namespace this package creates:
// "narrows-<pid>-<n>-a" and "narrows-<pid>-<n>-b". CleanupStale relies on it.
const NamePrefix = "narrows-"

// Host is one end of a Link or a DelayLine: a network namespace with one
// device (a veth end, or a TUN device).
type Host struct {
	Name string     // "a" or "b"
	NS   string     // network namespace name, as shown by `ip netns list`
	Addr netip.Addr // IPv4 address of Dev, in 198.18.0.0/15
	Dev  string     // the device inside NS
}

// Command runs name/args inside the host's namespace
// (`ip netns exec NS name args...`). ip execs into the target, so the
// process that ctx kills is the command itself. WaitDelay is set so that
// Wait cannot hang on pipes held open by grandchildren after ctx is done.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// String returns "a(narrows-123-1-a 198.18.1.1)".
func (h *Host) String() string {
	return h.Name + "(" + h.NS + " " + h.Addr.String() + ")"
}

// LinkOptions shape a Link. The zero value is an unshaped 1500-byte-MTU link.
type LinkOptions struct {
	// RateBitsPerSecond is the tbf rate applied to egress of BOTH veth
	// ends (so each direction is limited). 0 = unshaped.
	RateBitsPerSecond int64
	// BurstBytes is the tbf bucket size. 0 = DefaultBurst(rate, mtu).
	BurstBytes int64
	// QueueLatency is tbf's "latency": how long a packet may wait in the
	// tbf queue before being dropped (sets the queue limit). 0 = 50ms.
	QueueLatency time.Duration
	// MTU of both veth ends. 0 = 1500.
	MTU int
	// MTUB, when set, is B's end's MTU instead: two hosts of one segment
	// whose devices disagree (jumbo frames set on one only).
	MTUB int
}

// Default values used for zero LinkOptions fields.
const (
	DefaultMTU          = 1500
	DefaultQueueLatency = 50 * time.Millisecond
	minDefaultBurst     = 32 << 10
	// ethernetHeader is counted by tbf: on a veth, qdisc_pkt_len includes
	// the 14-byte Ethernet header, so a full-MTU frame costs MTU+14 tokens.
	ethernetHeader = 14
)

// DefaultBurst is the tbf bucket used when LinkOptions.BurstBytes is 0:
//
//	max(rate/250/8, 32 KiB, mtu+14)
//
// rate/HZ/8 is the classic tc-tbf(8) rule ("burst must be at least rate/HZ"
// so the bucket does not run dry between timer ticks); 250 is the common
// distribution CONFIG_HZ. Modern kernels wake tbf with hrtimers, so this is
// generous rather than required, and it bounds the burst to 4ms worth of
// rate. The 32 KiB floor keeps low rates from starving on GSO bursts (tbf
// segments GSO packets larger than the bucket, but a tiny bucket still
// costs accuracy), and a bucket smaller than one frame (mtu+14 bytes
// including the Ethernet header) could never send a full-size packet.
func DefaultBurst(rateBitsPerSecond int64, mtu int) int64 {
	if mtu == 0 {
		mtu = DefaultMTU
	}
	b := rateBitsPerSecond / 250 / 8
	b = max(b, minDefaultBurst)
	b = max(b, int64(mtu+ethernetHeader))
	return b
}

// withDefaults fills zero fields and validates.
func (o LinkOptions) withDefaults() (LinkOptions, error) {
	if o.RateBitsPerSecond < 0 || o.BurstBytes < 0 || o.QueueLatency < 0 || o.MTU < 0 {
		return o, errors.New("testbed: negative LinkOptions field")
	}
	if o.MTU == 0 {
		o.MTU = DefaultMTU
	}
	if o.MTU < 576 || o.MTU > 65535 || o.MTUB != 0 && (o.MTUB < 576 || o.MTUB > 65535) {
		return o, errors.New("testbed: MTU must be within 576..65535")
	}
	if o.RateBitsPerSecond > 0 {
		if o.BurstBytes == 0 {
			o.BurstBytes = DefaultBurst(o.RateBitsPerSecond, o.MTU)
		}
		if o.BurstBytes < int64(o.MTU+ethernetHeader) {
			return o, errors.New("testbed: BurstBytes smaller than one MTU-sized frame; tbf would never send it")
		}
		if o.QueueLatency == 0 {
			o.QueueLatency = DefaultQueueLatency
		}
	}
	return o, nil
}

// Link is two hosts (namespaces) joined by a veth pair.
type Link struct {
	A, B    *Host
	Options LinkOptions // with defaults filled in

	// Prefix is the /24 both hosts are on.
	Prefix netip.Prefix

	closeOnce sync.Once
	closeErr  error
}

// Hosts returns A and B.
func (l *Link) Hosts() []*Host { return []*Host{l.A, l.B} }

// Close deletes both namespaces (the veth pair goes with them; teardown,
// per platform). It is idempotent: later calls return the first call's
// result.
func (l *Link) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.teardown() })
	return l.closeErr
}
