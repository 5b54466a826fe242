package metric

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// One table for every amount of bytes typed on a command line, sizes and
// rates alike (STYLE: decimal and binary units as their suffixes say):
//
//	KiB MiB GiB TiB PiB   binary, 2¹⁰ … 2⁵⁰ (Ki Mi Gi Ti Pi too)
//	kB KB MB GB TB PB     decimal, 10³ … 10¹⁵, as DBAs and storage vendors
//	                      quote sizes (a "10 TB" database is 10¹³ bytes)
//	K M G T               binary: a bare letter is how iperf3's -l, fio's
//	                      bs, dd and sysctl write a block or a buffer, and
//	                      a DBA who types 64K means 65,536 bytes
//	B, or nothing         bytes
//
// Matched without regard to case, longest suffix first. STYLE.md reads a
// bare K as 1,000; this table does not, and says why: every block size a
// DBA copies from fio, iperf3, dd or a vendor's guide is written 8K or
// 64K and means 8,192 or 65,536, and read as 8,000 it is not a block
// direct I/O can use. KB (and kB) is decimal, as the suffix says.
type suffix struct {
	suffix string
	mult   float64
}

var byteUnits = []suffix{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"pib", 1 << 50},
	{"ki", 1 << 10}, {"mi", 1 << 20}, {"gi", 1 << 30}, {"ti", 1 << 40}, {"pi", 1 << 50},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"pb", 1e15},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1}, {"", 1},
}

// bitPrefixes are a bit rate's, always decimal, as link speeds and tc's
// rates are (100M is 10⁸ bit/s).
var bitPrefixes = []suffix{{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"", 1}}

// number reads a finite number, spaces around it allowed.
func number(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// scaled reads a number followed by one of table's suffixes (the first
// that matches), not yet rounded.
func scaled(s string, table []suffix) (float64, bool) {
	low := strings.ToLower(strings.TrimSpace(s))
	for _, u := range table {
		if num, ok := strings.CutSuffix(low, u.suffix); ok {
			if f, ok := number(num); ok && strings.TrimSpace(num) != "" {
				return f * u.mult, true
			}
			return 0, false
		}
	}
	return 0, false
}

// bytesOf reads an amount of bytes by byteUnits.
func bytesOf(s string) (float64, bool) { return scaled(s, byteUnits) }

// bitsOf reads a count of bits with a decimal prefix: "100M", "1.5G".
func bitsOf(s string) (float64, bool) { return scaled(s, bitPrefixes) }

// cutBits takes a bit rate's unit off s: "bit/s", "bits/s", "bit", "bps" or
// "b/s" with a lower-case b (Mbps, Mb/s: bits, as network people write
// them; MBps, MB/s: bytes). It says whether s named bits.
func cutBits(s string) (string, bool) {
	in := strings.TrimSpace(s)
	low := strings.ToLower(in)
	for _, u := range []string{"bits/s", "bit/s", "bits", "bit"} {
		if num, ok := strings.CutSuffix(low, u); ok {
			return num, true
		}
	}
	for _, u := range []string{"bps", "b/s"} {
		if num, ok := strings.CutSuffix(in, u); ok {
			return num, true
		}
	}
	return in, false
}

// ParseSize reads an amount of bytes by the one table above: "64",
// "64B", "128K" and "128KiB" (131,072), "128KB" (128,000), "1.5MiB",
// "100GB". A fraction of a byte is refused below a megabyte and rounded
// above it (where half a byte is less than a millionth).
func ParseSize(s string) (int64, error) {
	v, ok := bytesOf(s)
	switch {
	case !ok:
		return 0, fmt.Errorf("invalid size %q: use a number with a unit, e.g. 64K or 64KiB (binary, 65,536 bytes), 64KB (decimal, 64,000 bytes), 100GB", s)
	case v < 0:
		return 0, fmt.Errorf("invalid size %q: must not be negative", s)
	case v > float64(1<<62):
		return 0, fmt.Errorf("invalid size %q: too large", s)
	case v != math.Trunc(v) && v < 1e6:
		return 0, fmt.Errorf("invalid size %q: not a whole number of bytes", s)
	}
	return int64(math.Round(v)), nil
}

// ParseStorageSize reads a size of stored data by ParseSize's table:
// "100GB" (10¹¹ bytes), "500GiB", "666755437B" or "666755437" (bytes),
// more than zero and at most an exabyte.
func ParseStorageSize(s string) (int64, error) {
	n, err := ParseSize(s)
	if err != nil || n < 1 || n > 1e18 {
		return 0, fmt.Errorf("invalid size %q: use e.g. 100GB, 1TB, 10TB (decimal), 500GiB (binary) or a count of bytes (666755437B)", s)
	}
	return n, nil
}

// ParseRate reads a rate as bytes per second, more than zero: an amount by
// ParseSize's table per second ("20MB/s", "20MiB/s", "20MBps", or a bare
// number of bytes per second), or bits per second as links are quoted,
// always decimal ("1Gbit/s", "100Mbit/s", "100Mbps", "100Mb/s").
func ParseRate(s string) (float64, error) {
	var v float64
	ok := false
	if num, bits := cutBits(s); bits {
		if b, good := bitsOf(num); good {
			v, ok = b/8, true
		}
	} else {
		// bytesOf ignores case: only the per-second suffix is cut here.
		low := strings.ToLower(strings.TrimSpace(s))
		if num, cut := strings.CutSuffix(low, "/s"); cut {
			low = num
		} else {
			low = strings.TrimSuffix(low, "ps")
		}
		v, ok = bytesOf(low)
	}
	if !ok || v <= 0 || v > 1e18 {
		return 0, fmt.Errorf("invalid rate %q: use e.g. 20MB/s (decimal, as the output shows rates), 20MiB/s (binary), or bits as links are quoted: 100Mbit/s, 1Gbit/s", s)
	}
	return v, nil
}

// ParseBitRate reads a link's rate in bits per second, zero or more, with
// a decimal prefix and an optional bit unit: "100M", "100Mbit",
// "100mbit/s", "10Mbps", "1.5G", "512k", "64000" (as tc reads "100mbit").
// A rate in bytes ("100MB") is refused: a line is quoted in bits.
func ParseBitRate(s string) (float64, error) {
	num, _ := cutBits(s)
	v, ok := bitsOf(num)
	if !ok || v < 0 || v > 1e15 {
		return 0, fmt.Errorf("invalid rate %q: use bits per second with k, M or G (decimal), e.g. 100M or 1Gbit/s", s)
	}
	return v, nil
}

// ParseDuration reads Go durations ("10s", "1m30s", "500ms"). A bare
// number other than 0 is refused: iperf3 reads "-t 10" as seconds, but a
// DBA who types "--duration 10" may mean minutes, and a run of the wrong
// length is worse than a question.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(in, 64); err == nil {
		if f == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("invalid duration %q: give a unit, e.g. %ss or %sm (a bare number could mean either)", s, in, in)
	}
	d, err := time.ParseDuration(in)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q: use a positive number with a unit, e.g. 10s, 500ms or 2m", s)
	}
	return d, nil
}

// BitsPerSecond converts a byte count over a duration to bits per second.
func BitsPerSecond(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / d.Seconds()
}

// FormatBitRate formats a network rate in decimal units, as network people
// and iperf3 do: "941.5 Mbit/s".
func FormatBitRate(bps float64) string {
	return formatDecimal(bps, "bit/s")
}

// FormatByteRate formats a rate in decimal bytes per second, the unit DBAs
// see beside log generation: "28.4 MB/s".
func FormatByteRate(bytesPerSecond float64) string {
	return formatDecimal(bytesPerSecond, "B/s")
}

// FormatDecimalBytes formats an amount in decimal bytes, "25.0 MB": for an
// amount shown beside a rate in B/s (a log generated at so many MB/s),
// which must be in the rate's unit.
func FormatDecimalBytes(b int64) string {
	return formatDecimal(float64(b), "B")
}

func formatDecimal(v float64, unit string) string {
	prefixes := []string{"", "k", "M", "G", "T", "P"}
	i := 0
	for math.Abs(v) >= 1000 && i < len(prefixes)-1 {
		v /= 1000
		i++
	}
	return trimFloat(v) + " " + prefixes[i] + unit
}

// FormatBytes formats a size in IEC units: "128 KiB", "1.5 MiB".
func FormatBytes(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(b)
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return trimFloat(v) + " " + units[i]
}

// FormatDuration formats a latency with three significant figures in the
// unit that suits it: "38.2 µs", "1.25 ms", "2.10 s"; a difference below
// zero with a minus sign: "−1.66 µs".
func FormatDuration(d time.Duration) string {
	switch {
	case d < 0 && d > math.MinInt64:
		return "−" + FormatDuration(-d)
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return sig3(float64(d)/float64(time.Microsecond)) + " µs"
	case d < time.Second:
		return sig3(float64(d)/float64(time.Millisecond)) + " ms"
	default:
		return sig3(d.Seconds()) + " s"
	}
}

// FormatCount groups digits: 12,345.
func FormatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Plural is a count of things: "1 session", "4 sessions", "1,200 rows".
func Plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return FormatCount(n) + " " + what + "s"
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func trimFloat(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
