package sysinfo

import (
	"errors"
	"runtime"
	"time"
)

// ErrUnavailable says a figure cannot be had on this platform.
var ErrUnavailable = errors.New("not available on this platform")

// NoTCPInfo words why ReadTCPInfo gave no TCP state, for a run's
// tcp_unavailable.
func NoTCPInfo(err error) string {
	if errors.Is(err, ErrUnavailable) {
		return noTCPInfo
	}
	return "TCP_INFO " + err.Error()
}

// NoSenderTCPInfo is what a stream says when its sending end gave no TCP
// state: it may be either end, on either platform.
const NoSenderTCPInfo = "TCP state not available from the sending end (Linux gives TCP_INFO; Windows gives SIO_TCP_INFO from 10 1703 / Server 2016)"

// Controller gives access to a socket's descriptor: a syscall.RawConn, or
// the data plane's netio.Socket.
type Controller interface {
	Control(f func(fd uintptr)) error
}

// TCPInfo is the part of a TCP socket's state that explains a throughput
// or latency figure. Cumulative counters are cumulative since the socket
// opened; callers difference them per interval.
type TCPInfo struct {
	RTT           time.Duration `json:"rtt_ns"`
	RTTVar        time.Duration `json:"rtt_var_ns"`
	MinRTT        time.Duration `json:"min_rtt_ns"`
	MSS           int64         `json:"mss_bytes"`
	PMTU          int64         `json:"pmtu_bytes"`
	CwndSegments  int64         `json:"cwnd_segments"`
	SndWnd        int64         `json:"snd_wnd_bytes"` // the peer's advertised receive window
	Retransmits   int64         `json:"retransmits"`   // segments, cumulative
	SegsOut       int64         `json:"segs_out"`      // cumulative
	BytesSent     int64         `json:"bytes_sent"`    // including retransmits, cumulative
	BytesRetrans  int64         `json:"bytes_retrans"` // cumulative
	DeliveryRate  int64         `json:"delivery_rate_bytes_per_second"`
	Busy          time.Duration `json:"busy_ns"`           // time with data in flight, cumulative
	RwndLimited   time.Duration `json:"rwnd_limited_ns"`   // stalled on the peer's window, cumulative
	SndbufLimited time.Duration `json:"sndbuf_limited_ns"` // stalled on our send buffer, cumulative
	// Timestamps says the connection carries TCP timestamps: 12 bytes of
	// options in every segment's header (Linux's default).
	Timestamps bool `json:"timestamps,omitempty"`
	// StallsUnknown says the system does not report the stall times
	// (Windows before 1809 gives TCP_INFO_v0, without them): Busy,
	// RwndLimited and SndbufLimited are 0 for want of a figure.
	StallsUnknown bool `json:"stalls_unknown,omitempty"`
}

// CwndBytes is the congestion window in bytes.
func (t *TCPInfo) CwndBytes() int64 { return t.CwndSegments * t.MSS }

// CPUTime is the user plus system CPU this process has used.
func CPUTime() (time.Duration, error) { return cpuTime() }

// TCPBuffers are the most a TCP socket's buffers may grow to on this host
// (Linux: the third field of net.ipv4.tcp_rmem and tcp_wmem, per network
// namespace): the largest window autotuning can give one stream. 0: not
// known.
type TCPBuffers struct {
	RmemMax int64 `json:"rmem_max_bytes,omitempty"`
	WmemMax int64 `json:"wmem_max_bytes,omitempty"`
	// RmemLow and WmemLow are the same settings' first two fields (min,
	// default): a command that raises a maximum keeps them as they are.
	// Absent when not known (not Linux, or an older agent).
	RmemLow []int64 `json:"rmem_min_default_bytes,omitempty"`
	WmemLow []int64 `json:"wmem_min_default_bytes,omitempty"`
	OS      string  `json:"os"`
}

// ReadTCPBuffers reads this host's TCP buffer settings.
func ReadTCPBuffers() TCPBuffers {
	r, w := tcpBuffers()
	b := TCPBuffers{RmemMax: r[2], WmemMax: w[2], OS: runtime.GOOS}
	if r[2] > 0 {
		b.RmemLow = r[:2]
	}
	if w[2] > 0 {
		b.WmemLow = w[:2]
	}
	return b
}
