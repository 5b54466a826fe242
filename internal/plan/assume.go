package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
)

// Assumption is one NAME=VALUE of an --assume: a figure given by hand.
type Assumption struct {
	Name  string // lower case, as typed otherwise ("network@4", "zstd-3.ratio")
	Value string // as typed, spaces trimmed
	Flag  string // the whole --assume it came in, for the error that names it
}

// ParseAssume reads every --assume of a command by the one grammar all the
// plans share: NAME=VALUE, several in one flag separated by commas, the
// flag repeatable, in the order given (a later one overrides an earlier).
// Which names a command knows, and what each value is, the command says:
// known lists them, and an unknown name is refused with that list and an
// example.
func ParseAssume(flags []string, known []string, example string) ([]Assumption, error) {
	var out []Assumption
	for _, f := range flags {
		refuse := func(why string) error {
			if old := oldCodecForm(f); old != "" {
				return fmt.Errorf("--assume %q: write a codec's figures as %s", f, old)
			}
			return fmt.Errorf("--assume %q: %s", f, why)
		}
		for _, part := range strings.Split(f, ",") {
			name, val, ok := strings.Cut(part, "=")
			name, val = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(val)
			if !ok || name == "" || val == "" {
				return nil, refuse("use NAME=VALUE, several separated by commas, e.g. " + example)
			}
			if !knownName(name, known) {
				return nil, refuse(fmt.Sprintf("unknown name %q: use %s (e.g. %s)", name, strings.Join(known, ", "), example))
			}
			out = append(out, Assumption{Name: name, Value: val, Flag: f})
		}
	}
	return out, nil
}

// knownName matches name to a known one; a known name written with a
// placeholder ("network@N", "CODEC.ratio") matches any name of its shape,
// the command reading what stands in for N or CODEC.
func knownName(name string, known []string) bool {
	for _, k := range known {
		switch {
		case k == name:
			return true
		case strings.HasSuffix(k, "@N"):
			base := strings.TrimSuffix(k, "@N")
			if n, ok := strings.CutPrefix(name, base+"@"); ok && n != "" {
				return true
			}
		case strings.HasPrefix(k, "CODEC."):
			if i := strings.LastIndex(name, "."); i > 0 && name[i:] == k[len("CODEC"):] {
				return true
			}
		}
	}
	return false
}

// oldCodecForm is the one-grammar spelling of a codec's figures written as
// before issue 26 (zstd-3=compress:400MB/s,decompress:1.2GB/s,ratio:4), or
// "" when f is not that.
func oldCodecForm(f string) string {
	codec, rest, ok := strings.Cut(f, "=")
	if !ok || !strings.Contains(rest, ":") {
		return ""
	}
	codec = strings.TrimSpace(codec)
	var parts []string
	for _, p := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), ":")
		if k == "side" {
			parts = append(parts, codec+".side="+v)
			continue
		}
		parts = append(parts, codec+"."+k+"="+v)
	}
	return strings.Join(parts, ",")
}

// Fail is an error about this assumption's value: why, and an example.
func (a Assumption) Fail(why, example string) error {
	return fmt.Errorf("--assume %q: %s=%s: %s, e.g. %s", a.Flag, a.Name, a.Value, why, example)
}

// Rate reads the value as bytes per second (metric.ParseRate: 117MB/s,
// 1Gbit/s).
func (a Assumption) Rate() (float64, error) {
	v, err := metric.ParseRate(a.Value)
	if err != nil {
		return 0, a.Fail("give a rate", a.Name+"=117MB/s or "+a.Name+"=1Gbit/s")
	}
	return v, nil
}

// Duration reads the value as a time above zero and at most an hour
// (zero too where zeroOK: a part a command lets be nothing).
func (a Assumption) Duration(zeroOK bool) (time.Duration, error) {
	d, err := metric.ParseDuration(a.Value)
	if err != nil || d < 0 || (d == 0 && !zeroOK) || d > time.Hour {
		return 0, a.Fail("give a time above zero and at most an hour", a.Name+"=2ms or "+a.Name+"=150us")
	}
	return d, nil
}

// Size reads the value as bytes from lo to hi (metric.ParseSize: 500B,
// 64KiB, 80KB).
func (a Assumption) Size(lo, hi int64) (int64, error) {
	n, err := metric.ParseSize(a.Value)
	if err != nil || n < lo || n > hi {
		return 0, a.Fail(fmt.Sprintf("give bytes from %s to %s", metric.FormatCount(lo), metric.FormatBytes(hi)), a.Name+"=500B or "+a.Name+"=128KiB")
	}
	return n, nil
}

// Count reads the value as a whole number from lo to hi.
func (a Assumption) Count(lo, hi int) (int, error) {
	n, err := strconv.Atoi(a.Value)
	if err != nil || n < lo || n > hi {
		return 0, a.Fail(fmt.Sprintf("give a whole number from %d to %d", lo, hi), fmt.Sprintf("%s=%d", a.Name, lo))
	}
	return n, nil
}

// Share reads the value as a share below one: "0.1%" or "0.001".
func (a Assumption) Share() (float64, error) {
	v := a.Value
	pct := strings.HasSuffix(v, "%")
	p, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, "%")), 64)
	if pct {
		p /= 100
	}
	if err != nil || math.IsNaN(p) || p < 0 || p >= 1 {
		return 0, a.Fail("give a share below 100%", a.Name+"=0.1%")
	}
	return p, nil
}

// Ratio reads the value as a ratio of at least lo: "4" or "4x".
func (a Assumption) Ratio(lo float64) (float64, error) {
	r, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(a.Value), "x"), 64)
	if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r < lo {
		return 0, a.Fail(fmt.Sprintf("give a ratio of at least %g", lo), a.Name+"=4")
	}
	return r, nil
}

// Word reads the value as one of words.
func (a Assumption) Word(words ...string) (string, error) {
	v := strings.ToLower(a.Value)
	for _, w := range words {
		if v == w {
			return v, nil
		}
	}
	return "", a.Fail("use "+strings.Join(words, ", "), a.Name+"="+words[0])
}
