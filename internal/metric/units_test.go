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
		{"128kb", 128 << 10, ""},
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
