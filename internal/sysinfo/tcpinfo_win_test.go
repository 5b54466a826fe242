package sysinfo

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// The structures below were laid out by mingw-w64's compiler from
// mstcpip.h (x86_64-w64-mingw32-gcc 12, with NTDDI_VERSION for Windows 10
// 1809): a TCP_INFO_v1 filled with the figures of a 40 ms path, its
// padding bytes set to ee, and the first 88 bytes of it as the v0. Wine
// refuses SIO_TCP_INFO (WSAEOPNOTSUPP), so the call itself is not run
// here; its layout and meaning are.
const (
	winV1Hex = `04000000b40500003930000000000000 00eeeeee129d00004c9c0000408e2c00
e0023100000040000000010000000200 807c814a00000000cd81010000000000
00000000a07404009600000058020000 0200000000eeeeee28000000581b0000
00e9a4350000000029000000c4090000 00a3e1110000000003000000f4010000
80f0fa0200000000`
)

func winBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeWinTCPInfoV1(t *testing.T) {
	b := winBytes(t, winV1Hex)
	ti, err := decodeWinTCPInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	// Filled as: Mss 1460, RttUs 40210, MinRttUs 40012, Cwnd 3212000
	// bytes, SndWnd 4194304, BytesOut 1250000000, BytesRetrans 292000,
	// SndLimTime Rwin 7000 ms, Cwnd 2500 ms, Snd 500 ms.
	want := TCPInfo{MSS: 1460, RTT: 40210 * time.Microsecond, MinRTT: 40012 * time.Microsecond,
		CwndSegments: 2200, SndWnd: 4194304, BytesSent: 1250000000, BytesRetrans: 292000, Retransmits: 200,
		RwndLimited: 7 * time.Second, SndbufLimited: 500 * time.Millisecond, Busy: 10 * time.Second}
	if *ti != want {
		t.Fatalf("decoded\n %+v\nwant\n %+v", *ti, want)
	}
	if got := ti.CwndBytes(); got != 3212000 {
		t.Errorf("CwndBytes = %d, want the 3212000 Windows gave", got)
	}
}

func TestDecodeWinTCPInfoV0(t *testing.T) {
	b := winBytes(t, winV1Hex)[:winTCPInfoV0Size]
	ti, err := decodeWinTCPInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	if !ti.StallsUnknown || ti.Busy != 0 || ti.RwndLimited != 0 {
		t.Errorf("v0 has no stall times, and must say so: %+v", *ti)
	}
	if ti.RTT != 40210*time.Microsecond || ti.SndWnd != 4194304 || ti.MSS != 1460 {
		t.Errorf("v0 decoded %+v", *ti)
	}
	b[16] = 1 // TimestampsEnabled
	if ti, _ := decodeWinTCPInfo(b); !ti.Timestamps {
		t.Error("TimestampsEnabled=1 did not set Timestamps")
	}
}

func TestDecodeWinTCPInfoRefusesOtherSizes(t *testing.T) {
	for _, n := range []int{0, 4, 87, 89, 135, 200} {
		if _, err := decodeWinTCPInfo(make([]byte, n)); err == nil || !strings.Contains(err.Error(), "SIO_TCP_INFO returned") {
			t.Errorf("%d bytes: err %v, want a refusal", n, err)
		}
	}
	// An MSS of 0 (a socket not yet connected) divides nothing.
	if ti, err := decodeWinTCPInfo(make([]byte, winTCPInfoV1Size)); err != nil || ti.CwndSegments != 0 {
		t.Errorf("zeros: %+v, %v", ti, err)
	}
}
