package metric

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sizes typed by people are binary (K = KiB = 1024), as iperf3's -l and
// fio's bs are: a DBA who types 64K means a 64 KiB block, never 64,000 bytes.
var sizeSuffixes = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1}, {"", 1},
}

// ParseSize reads "64", "64B", "128K", "128KiB", "1.5MiB" as bytes.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	low := strings.ToLower(in)
	for _, sf := range sizeSuffixes {
		if !strings.HasSuffix(low, sf.suffix) {
			continue
		}
		num := strings.TrimSpace(low[:len(low)-len(sf.suffix)])
		if num == "" {
			break
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			break
		}
		if f < 0 {
			return 0, fmt.Errorf("invalid size %q: must not be negative", s)
		}
		v := f * float64(sf.mult)
		if v > float64(1<<62) {
			return 0, fmt.Errorf("invalid size %q: too large", s)
		}
		if v != math.Trunc(v) {
			return 0, fmt.Errorf("invalid size %q: not a whole number of bytes", s)
		}
		return int64(v), nil
	}
	return 0, fmt.Errorf("invalid size %q: use a number with B, K, M or G (binary: 64K = 65536 bytes), e.g. 128K", s)
}

// storageSuffixes are sizes as DBAs and storage vendors quote them
// (STYLE: GB = 10⁹, GiB = 2³⁰, a bare count in bytes): a "10 TB" database
// is 10¹³ bytes. ParseSize's table reads K, M, G as binary, as block
// sizes are given; a database's size is not a block.
var storageSuffixes = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"pib", 1 << 50},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"pb", 1e15},
	{"b", 1}, {"", 1},
}

// ParseStorageSize reads a size of stored data: "100GB" (10¹¹ bytes),
// "500GiB", "666755437B" or "666755437" (bytes), more than zero.
func ParseStorageSize(s string) (int64, error) {
	low := strings.ToLower(strings.TrimSpace(s))
	for _, sf := range storageSuffixes {
		num, ok := strings.CutSuffix(low, sf.suffix)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f*sf.mult > 1e18 || f*sf.mult < 1 {
			break
		}
		return int64(math.Round(f * sf.mult)), nil
	}
	return 0, fmt.Errorf("invalid size %q: use e.g. 100GB, 1TB, 10TB (decimal), 500GiB (binary) or a count of bytes (666755437B)", s)
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
// unit that suits it: "38.2 µs", "1.25 ms", "2.10 s".
func FormatDuration(d time.Duration) string {
	switch {
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
