package itest

import (
	"testing"
	"unicode/utf8"

	"github.com/narrows/narrows/internal/untrusted"
)

// ControlBytes counts the bytes in s a terminal would act on rather than
// show: control characters other than \n and \t, DEL, C1 controls (as
// UTF-8), bidirectional overrides, and bytes that are not UTF-8.
func ControlBytes(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r != '\n' && r != '\t' && untrusted.Control(r) {
			n += size
		}
		i += size
	}
	return n
}

// NoControls fails t when a command's output holds anything ControlBytes
// counts: what came from elsewhere must reach the terminal escaped.
func NoControls(t testing.TB, what string, r Result) {
	t.Helper()
	t.Logf("%s: %d control bytes on stdout, %d on stderr", what, ControlBytes(r.Stdout), ControlBytes(r.Stderr))
	for name, s := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
		if n := ControlBytes(s); n > 0 {
			t.Errorf("%s: %d control bytes reach the terminal on %s:\n%q", what, n, name, s)
		}
	}
}
