//go:build linux

package sysinfo

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const noTCPInfo = "TCP_INFO not available"

// tcpiOptTimestamps is TCPI_OPT_TIMESTAMPS of tcpi_options (linux/tcp.h).
const tcpiOptTimestamps = 1

// ReadTCPInfo reads TCP_INFO from a connection's socket.
func ReadTCPInfo(rc Controller) (*TCPInfo, error) {
	var ti *unix.TCPInfo
	var serr error
	err := rc.Control(func(fd uintptr) {
		ti, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	if err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	us := func(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }
	return &TCPInfo{
		RTT:           us(ti.Rtt),
		RTTVar:        us(ti.Rttvar),
		MinRTT:        us(ti.Min_rtt),
		MSS:           int64(ti.Snd_mss),
		PMTU:          int64(ti.Pmtu),
		CwndSegments:  int64(ti.Snd_cwnd),
		SndWnd:        int64(ti.Snd_wnd),
		Retransmits:   int64(ti.Total_retrans),
		SegsOut:       int64(ti.Segs_out),
		BytesSent:     int64(ti.Bytes_sent),
		BytesRetrans:  int64(ti.Bytes_retrans),
		DeliveryRate:  int64(ti.Delivery_rate),
		Busy:          time.Duration(ti.Busy_time) * time.Microsecond,
		RwndLimited:   time.Duration(ti.Rwnd_limited) * time.Microsecond,
		SndbufLimited: time.Duration(ti.Sndbuf_limited) * time.Microsecond,
		Timestamps:    ti.Options&tcpiOptTimestamps != 0,
	}, nil
}

// tcpBufferMax reads the third field of net.ipv4.tcp_rmem and tcp_wmem.
func tcpBufferMax() (rmem, wmem int64) {
	r, w := tcpBuffers()
	return r[2], w[2]
}

// tcpBuffers reads net.ipv4.tcp_rmem and tcp_wmem whole (min, default,
// max): a command that raises the maximum must keep the other two as they
// are. Zeros where a file is missing or malformed.
func tcpBuffers() (rmem, wmem [3]int64) {
	three := func(path string) (v [3]int64) {
		b, err := os.ReadFile(path)
		if err != nil {
			return v
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			return v
		}
		for i := range f {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return [3]int64{}
			}
			v[i] = n
		}
		return v
	}
	return three("/proc/sys/net/ipv4/tcp_rmem"), three("/proc/sys/net/ipv4/tcp_wmem")
}
