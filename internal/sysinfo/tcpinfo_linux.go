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
	third := func(path string) int64 {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			return 0
		}
		n, _ := strconv.ParseInt(f[2], 10, 64)
		return n
	}
	return third("/proc/sys/net/ipv4/tcp_rmem"), third("/proc/sys/net/ipv4/tcp_wmem")
}
