package sysinfo

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Windows' TCP state comes from WSAIoctl(SIO_TCP_INFO) (Windows 10 1703
// and Server 2016 or later) as one of two structures of mstcpip.h,
// TCP_INFO_v0 and TCP_INFO_v1 (1809 / Server 2019 and later, which adds
// the time the sender spent limited by the receiver's window, by the
// congestion window and by itself). They are decoded here, on every
// platform, so the layout is tested on Linux with structures laid out by
// mingw-w64's compiler from that header (sysinfo's tests).
const (
	winTCPInfoV0Size = 88
	winTCPInfoV1Size = 136
	sioTCPInfo       = 0xD8000027 // _WSAIORW(IOC_VENDOR, 39)
)

// decodeWinTCPInfo reads a TCP_INFO_v0 or TCP_INFO_v1, told apart by
// length. Windows counts the congestion window in bytes, where Linux
// counts segments: CwndSegments is it over the MSS, rounded. Windows
// counts retransmitted bytes, not segments: Retransmits is those bytes
// over the MSS, rounded up. It has no RTT variance, delivery rate or path
// MTU, which stay 0.
func decodeWinTCPInfo(b []byte) (*TCPInfo, error) {
	if len(b) != winTCPInfoV0Size && len(b) != winTCPInfoV1Size {
		return nil, fmt.Errorf("SIO_TCP_INFO returned %d bytes, neither TCP_INFO_v0 (%d) nor v1 (%d)", len(b), winTCPInfoV0Size, winTCPInfoV1Size)
	}
	u32 := func(off int) int64 { return int64(binary.LittleEndian.Uint32(b[off:])) }
	u64 := func(off int) int64 { return int64(binary.LittleEndian.Uint64(b[off:])) }
	us := func(off int) time.Duration { return time.Duration(u32(off)) * time.Microsecond }
	ms := func(off int) time.Duration { return time.Duration(u32(off)) * time.Millisecond }
	t := &TCPInfo{
		MSS:          u32(4),
		Timestamps:   b[16] != 0,
		RTT:          us(20),
		MinRTT:       us(24),
		SndWnd:       u32(36),
		BytesSent:    u64(48),
		BytesRetrans: u32(68),
	}
	if cwnd := u32(32); t.MSS > 0 {
		t.CwndSegments = (cwnd + t.MSS/2) / t.MSS
		t.Retransmits = (t.BytesRetrans + t.MSS - 1) / t.MSS
	}
	if len(b) == winTCPInfoV1Size {
		// SndLimTime{Rwin,Cwnd,Snd}: the sending time, split by what
		// held the sender (RFC 4898's Estats), in milliseconds. The
		// three together are the time with data to send.
		t.RwndLimited, t.SndbufLimited = ms(92), ms(124)
		t.Busy = t.RwndLimited + ms(108) + t.SndbufLimited
	} else {
		t.StallsUnknown = true
	}
	return t, nil
}
