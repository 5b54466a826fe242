package metric

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"64", 64, ""},
		{"64B", 64, ""},
		{"128K", 128 << 10, ""},
		{"128KiB", 128 << 10, ""},
		{"128kb", 128_000, ""}, // decimal, as its suffix says
		{"128KB", 128_000, ""},
		{"8k", 8 << 10, ""},
		{"100GB", 100e9, ""},
		{"1.5TB", 1.5e12, ""},
		{"1TiB", 1 << 40, ""},
		{"1.1GiB", 1181116006, ""}, // 1,181,116,006.4: rounded above a megabyte
		{"0.1K", 0, "whole number"},
		{"1.5MiB", 3 << 19, ""},
		{"2G", 2 << 30, ""},
		{" 500 ", 500, ""},
		{"10XB", 0, "invalid size \"10XB\""},
		{"", 0, "invalid size"},
		{"K", 0, "invalid size"},
		{"-1K", 0, "negative"},
		{"1.3B", 0, "whole number"},
		{"NaN", 0, "invalid size"},
		{"1e30G", 0, "too large"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseSize(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ParseSize(%q) = %d, %v; want error containing %q", c.in, got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10s", 10 * time.Second, true},
		{"10", 0, false}, // seconds or minutes? narrows asks
		{"0.5", 0, false},
		{"0", 0, true}, // "until stopped" where a command allows it
		{"1m30s", 90 * time.Second, true},
		{"250ms", 250 * time.Millisecond, true},
		{"10x", 0, false},
		{"-3s", 0, false},
		{"-3", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseDuration(c.in)
			if c.ok != (err == nil) || got != c.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "e.g. ") {
				t.Fatalf("error %q does not say what to type", err)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	cases := []struct{ got, want string }{
		{FormatBitRate(941_500_000), "942 Mbit/s"},
		{FormatBitRate(28_400_000), "28.4 Mbit/s"},
		{FormatBitRate(12), "12 bit/s"},
		{FormatByteRate(3_250_000), "3.25 MB/s"},
		{FormatBytes(128 << 10), "128 KiB"},
		{FormatBytes(3 << 19), "1.50 MiB"},
		{FormatDuration(38200 * time.Nanosecond), "38.2 µs"},
		{FormatDuration(1250 * time.Microsecond), "1.25 ms"},
		{FormatDuration(2100 * time.Millisecond), "2.10 s"},
		{FormatDuration(400), "400 ns"},
		{FormatCount(1234567), "1,234,567"},
		{FormatCount(-1234), "-1,234"},
		{FormatCount(12), "12"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if got := BitsPerSecond(125_000_000, time.Second); got != 1e9 {
		t.Errorf("BitsPerSecond = %v, want 1e9", got)
	}
	if got := BitsPerSecond(1, 0); got != 0 {
		t.Errorf("BitsPerSecond over zero time = %v, want 0", got)
	}
}

// TestParseStorageSize: a database's size means what its suffix says,
// decimal GB as DBAs quote them, and a bare count of bytes (with or
// without B) is bytes: issue 25 §2.10 found --size 666755437B refused.
func TestParseStorageSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"666755437B", 666755437}, {"666755437", 666755437}, {"100GB", 100e9}, {"10TB", 10e12}, {"1.5 TB", 1.5e12},
		{"500GiB", 500 << 30}, {"64KiB", 64 << 10}, {"2kb", 2000}, {"1PB", 1e15}} {
		if got, err := ParseStorageSize(c.in); err != nil || got != c.want {
			t.Errorf("ParseStorageSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "B", "0", "-5GB", "0.5B", "abc", "10XB", "NaNGB", "2000PB"} {
		if got, err := ParseStorageSize(bad); err == nil {
			t.Errorf("ParseStorageSize(%q) = %d, want an error", bad, got)
		}
	}
}

// TestOneTable: every parser of an amount of bytes reads a suffix the same
// way (issue 26: GB was 2³⁰ in one flag and 10⁹ in another, K 1,024 in a
// size and 1,000 in a rate).
func TestOneTable(t *testing.T) {
	for _, c := range []struct {
		unit string
		want float64
	}{{"K", 1 << 10}, {"KiB", 1 << 10}, {"Ki", 1 << 10}, {"Gi", 1 << 30}, {"KB", 1e3}, {"kB", 1e3}, {"M", 1 << 20}, {"MiB", 1 << 20}, {"MB", 1e6},
		{"G", 1 << 30}, {"GiB", 1 << 30}, {"GB", 1e9}, {"T", 1 << 40}, {"TB", 1e12}, {"B", 1}, {"", 1}} {
		size, err := ParseSize("3" + c.unit)
		if err != nil || float64(size) != 3*c.want {
			t.Errorf("ParseSize(3%s) = %d, %v; want %.0f", c.unit, size, err, 3*c.want)
		}
		for _, per := range []string{"/s", "ps"} {
			if c.unit == "" && per == "ps" {
				continue
			}
			rate, err := ParseRate("3" + c.unit + per)
			if err != nil || rate != 3*c.want {
				t.Errorf("ParseRate(3%s%s) = %v, %v; want %.0f", c.unit, per, rate, err, 3*c.want)
			}
		}
		if c.unit != "" {
			if st, err := ParseStorageSize("3" + c.unit); err != nil || float64(st) != 3*c.want {
				t.Errorf("ParseStorageSize(3%s) = %d, %v; want %.0f", c.unit, st, err, 3*c.want)
			}
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{{"20MB/s", 20e6}, {"20MiB/s", 20 << 20}, {"20MBps", 20e6}, {"117MB/s", 117e6}, {"500KB/s", 500e3}, {"1000", 1000},
		// bits, always decimal, as links are quoted; a lower-case b in
		// bps or b/s is bits, an upper-case B bytes
		{"1Gbit/s", 1e9 / 8}, {"100Mbit/s", 100e6 / 8}, {"10Gbit", 10e9 / 8}, {"100Mbps", 100e6 / 8}, {"100Mb/s", 100e6 / 8},
		{"800bit/s", 100}} {
		if got, err := ParseRate(c.in); err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0", "-1MB/s", "fast", "MB/s", "NaNMB/s", "1e30GB/s", "10XB/s", "Mbit/s"} {
		if got, err := ParseRate(bad); err == nil || !strings.Contains(err.Error(), "e.g. 20MB/s") {
			t.Errorf("ParseRate(%q) = %v, %v; want an error that says what to type", bad, got, err)
		}
	}
}

func TestParseBitRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{{"0", 0}, {"100M", 100e6}, {"100mbit", 100e6}, {"100Mbit/s", 100e6}, {"1.5G", 1.5e9}, {"512k", 512e3},
		{"64000", 64000}, {"10Mbps", 10e6}, {"10Mb/s", 10e6}} {
		if got, err := ParseBitRate(c.in); err != nil || got != c.want {
			t.Errorf("ParseBitRate(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "100MB", "100MB/s", "100MBps", "-1M", "fast", "1e20G"} {
		if got, err := ParseBitRate(bad); err == nil {
			t.Errorf("ParseBitRate(%q) = %v, want an error (a line is quoted in bits)", bad, got)
		}
	}
}
