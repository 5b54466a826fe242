package untrusted_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/narrows/narrows/internal/untrusted"
)

// acts returns what in s a terminal could act on: a byte below 0x20 other
// than \n and \t (lines) or any (!lines), DEL, a C1 control, a
// bidirectional override, a byte that is not UTF-8.
func acts(s string, lines bool) []string {
	var bad []string
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			bad = append(bad, fmt.Sprintf("byte %#x", s[i]))
		case lines && (r == '\n' || r == '\t'):
		case untrusted.Control(r):
			bad = append(bad, fmt.Sprintf("%U", r))
		}
		i += n
	}
	return bad
}

// hostile holds every kind of rune that must not reach a terminal.
var hostile = func() []string {
	var ss []string
	for c := range rune(0x20) {
		ss = append(ss, string(c))
	}
	ss = append(ss, "\x7f")
	for c := rune(0x80); c <= 0x9f; c++ {
		ss = append(ss, string(c))
	}
	for _, c := range []rune{0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029} {
		ss = append(ss, string(c))
	}
	return append(ss, "\xff", "\xc3", "\xe2\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80")
}()

func TestText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"db2.example.com", "db2.example.com"},
		{"сервер-бд-01 → 10 µs × 2 … 日本 🙂", "сервер-бд-01 → 10 µs × 2 … 日本 🙂"},
		{"\uFFFD is a real replacement character", "\uFFFD is a real replacement character"},
		{`a \x1b already escaped`, `a \x1b already escaped`},
		{"busy\x1b]52;c;aGk=\x07\x1b[2J", `busy\x1b]52;c;aGk=\a\x1b[2J`},
		{"\x1b]0;title\x07", `\x1b]0;title\a`},
		{"ok\rPWNED", `ok\rPWNED`},
		{"two\nlines\tand a tab", `two\nlines\tand a tab`},
		{"\x00\x01\x08\x0b\x0c\x1f", `\x00\x01\b\v\f\x1f`},
		{"del\x7f", `del\u007f`},
		{"c1 csi \u009b2J and \u0085", `c1 csi \u009b2J and \u0085`},
		{"evil\u202etxt.exe \u2066x\u2069 \u200e\u200f\u061c", `evil\u202etxt.exe \u2066x\u2069 \u200e\u200f\u061c`},
		{"bad \xff \xc3( \xed\xa0\x80 end \xe2\x80", `bad \xff \xc3( \xed\xa0\x80 end \xe2\x80`},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			got := untrusted.Text(c.in)
			if got != c.want {
				t.Fatalf("Text(%q) = %q, want %q", c.in, got, c.want)
			}
			if again := untrusted.Text(got); again != got {
				t.Fatalf("Text is not idempotent: %q then %q", got, again)
			}
		})
	}
	for _, h := range hostile {
		got := untrusted.Text("a" + h + "b")
		if bad := acts(got, false); len(bad) > 0 || !strings.HasPrefix(got, "a\\") || !strings.HasSuffix(got, "b") {
			t.Errorf("Text(%q) = %q: shows %v raw", h, got, bad)
		}
	}
}

func TestQuote(t *testing.T) {
	cases := []struct{ in, want string }{
		{"busy", `"busy"`},
		{`it said "ok" \o/`, `"it said \"ok\" \\o/"`},
		{"\x1b]52;c;aGk=\x07\r\u202e", `"\x1b]52;c;aGk=\a\r\u202e"`},
		{strings.Repeat("é", untrusted.MaxQuoted), `"` + strings.Repeat("é", untrusted.MaxQuoted) + `"`},
		{strings.Repeat("é", untrusted.MaxQuoted+1), `"` + strings.Repeat("é", untrusted.MaxQuoted) + `…"`},
		{strings.Repeat("\x1b", 10000), `"` + strings.Repeat(`\x1b`, untrusted.MaxQuoted) + `…"`},
	}
	for _, c := range cases {
		if got := untrusted.Quote(c.in); got != c.want {
			t.Errorf("Quote(%.40q) = %.60q, want %.60q", c.in, got, c.want)
		}
	}
}

// writeIn writes s to an untrusted.Writer in pieces cut at cuts, flushes
// it, and returns what reached the far side.
func writeIn(t *testing.T, s string, cuts ...int) string {
	t.Helper()
	var out bytes.Buffer
	w := untrusted.NewWriter(&out)
	last := 0
	for _, c := range append(cuts, len(s)) {
		n, err := w.Write([]byte(s[last:c]))
		if err != nil || n != c-last {
			t.Fatalf("Write(%q) = %d, %v", s[last:c], n, err)
		}
		last = c
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestWriter(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain ASCII\n\tindented\n", "plain ASCII\n\tindented\n"},
		{"narrows net rr → db2: 1 µs … сервер\n", "narrows net rr → db2: 1 µs … сервер\n"},
		{"narrows: agent busy: busy\x1b]52;c;aGk=\x07\x1b[2J\rok (retry in 1s)\n", "narrows: agent busy: busy\\x1b]52;c;aGk=\\a\\x1b[2J\\rok (retry in 1s)\n"},
		{"\u009b31m red \u202e \x7f \xff\n", `\u009b31m red \u202e \u007f \xff` + "\n"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			if got := writeIn(t, c.in); got != c.want {
				t.Fatalf("whole: %q, want %q", got, c.want)
			}
			// Cut anywhere, in one place or two (a rune's bytes split over
			// three writes): the same bytes come out.
			for i := 0; i <= len(c.in); i++ {
				if got := writeIn(t, c.in, i); got != c.want {
					t.Fatalf("cut at %d: %q, want %q", i, got, c.want)
				}
				for j := i; j <= len(c.in) && j <= i+3; j++ {
					if got := writeIn(t, c.in, i, j); got != c.want {
						t.Fatalf("cut at %d and %d: %q, want %q", i, j, got, c.want)
					}
				}
			}
		})
	}
	for _, h := range hostile {
		got := writeIn(t, "a"+h+"b\n")
		if bad := acts(got, true); len(bad) > 0 {
			t.Errorf("Writer let %q through as %q: %v", h, got, bad)
		}
		// A sequence left unfinished by the last write is held, then
		// flushed as its bytes.
		got = writeIn(t, "a"+h)
		if bad := acts(got, true); len(bad) > 0 || len(got) <= 1 {
			t.Errorf("Writer ended with %q as %q: %v", h, got, bad)
		}
	}
}

// TestWriterKeepsJSON: JSON that passes through the Writer (--json, a
// saved run, history --json) stays valid and decodes to the same strings:
// Go's encoder leaves DEL, C1 controls and bidirectional overrides raw,
// and the Writer shows them as JSON's own \u escapes.
func TestWriterKeepsJSON(t *testing.T) {
	type record struct {
		Agent string            `json:"agent"`
		Notes []string          `json:"notes"`
		Facts map[string]string `json:"facts"`
	}
	in := record{Agent: strings.Join(hostile[:len(hostile)-6], ""), Notes: hostile[:len(hostile)-6],
		Facts: map[string]string{"host\u202e": "сервер\u009b2J", "kernel": "6.1\x1b]0;x\x07"}}
	var out bytes.Buffer
	w := untrusted.NewWriter(&out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for range 2 {
		if err := enc.Encode(in); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if bad := acts(out.String(), true); len(bad) > 0 {
		t.Fatalf("raw in the JSON: %v", bad)
	}
	for line := range strings.Lines(out.String()) {
		var back record
		if !json.Valid([]byte(line)) {
			t.Fatalf("not JSON: %s", line)
		}
		if err := json.Unmarshal([]byte(line), &back); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(back) != fmt.Sprint(in) {
			t.Fatalf("decoded %q, want %q", back, in)
		}
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("closed pipe") }

func TestWriterPassesErrors(t *testing.T) {
	for _, s := range []string{"plain\n", "\x1b[2J\n"} {
		if n, err := untrusted.NewWriter(failing{}).Write([]byte(s)); err == nil || n != 0 {
			t.Errorf("Write(%q) to a failing writer = %d, %v", s, n, err)
		}
	}
}

func TestClean(t *testing.T) {
	type nic struct {
		Name     string
		Offloads map[string]bool
	}
	type facts struct {
		Hostname string
		NICs     []nic
		Token    []byte
		Next     *facts
		Any      any
		hidden   string
	}
	f := &facts{Hostname: "db2\x1b]0;x\x07", NICs: []nic{{Name: "eth0\u202e", Offloads: map[string]bool{"tso\x9b": true, "\u009bgso": false}}},
		Token: []byte("\x1b"), Next: &facts{Hostname: "\r"}, Any: &nic{Name: "\x7f"}, hidden: "\x1b"}
	untrusted.Clean(f)
	got := fmt.Sprintf("%q %v %q %q %q %q", f.Hostname, f.NICs, f.Token, f.Next.Hostname, f.Any.(*nic).Name, f.hidden)
	want := fmt.Sprintf("%q %v %q %q %q %q", `db2\x1b]0;x\a`, []nic{{Name: `eth0\u202e`, Offloads: map[string]bool{`tso\x9b`: true, `\u009bgso`: false}}},
		[]byte("\x1b"), `\r`, `\u007f`, "\x1b")
	if got != want {
		t.Fatalf("Clean:\n got %s\nwant %s", got, want)
	}
	untrusted.Clean((*facts)(nil)) // nothing to do, and no panic
	untrusted.Clean(nil)
}

// TestOneLine: lines and tabs become single spaces, the ends trimmed.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"pq: password authentication failed\n\tfor user \"narrows\"  ": `pq: password authentication failed for user "narrows"`,
		"":         "",
		"one line": "one line",
		" \r\n ":   "",
	} {
		if got := untrusted.OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
