// Package untrusted makes text that came from elsewhere — an agent, a
// database server, a driver's error, a saved run, the history — safe to
// show: a terminal acts on control characters (ESC ] 52 writes the
// clipboard, ESC [ 2J clears the screen, \r overwrites a line, U+202E
// reverses what follows), so every such rune is shown escaped, as text,
// and never reaches the terminal as itself.
//
// Text and Quote are for a string a caller knows came from elsewhere, and
// Clean for every string of a message or a record, where it is received
// or read; Writer is the backstop cli puts under standard output and
// standard error, so that a string nobody thought of is escaped too. It
// decides nothing else: whom to believe, and how to say so, is the
// caller's.
//
// The escapes are one rule everywhere: a C0 control or a byte that is not
// UTF-8 as \xNN (the usual ones as \n, \r, \t, ...), DEL, a C1 control or a
// bidirectional or line-separating format character as \uXXXX. Everything
// else, any script's printable text, is left alone. The \uXXXX form is
// JSON's own escape: a JSON document that passes through Writer stays
// valid JSON and decodes to the same strings (JSON's encoder already
// escapes C0 controls, and outside its strings JSON is ASCII), so
// --json output and saved runs need no second variant.
package untrusted

import (
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxQuoted is the most runes Quote shows of a string: the words of a peer
// that has not proved who it is are shown, not a page of them.
const MaxQuoted = 200

// Control says whether a terminal may act on r rather than show it: what
// Text, Quote and Writer escape.
func Control(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1 (U+009B is CSI)
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, // Arabic letter mark, LRM, RLM
		r >= 0x202a && r <= 0x202e, // LRE, RLE, PDF, LRO, RLO
		r >= 0x2066 && r <= 0x2069, // LRI, RLI, FSI, PDI
		r == 0x2028, r == 0x2029:   // line and paragraph separators
		return true
	}
	return false
}

const hex = "0123456789abcdef"

// appendRune appends r, which Control accepts, as its escape.
func appendRune(b []byte, r rune) []byte {
	switch r {
	case '\a':
		return append(b, `\a`...)
	case '\b':
		return append(b, `\b`...)
	case '\f':
		return append(b, `\f`...)
	case '\n':
		return append(b, `\n`...)
	case '\r':
		return append(b, `\r`...)
	case '\t':
		return append(b, `\t`...)
	case '\v':
		return append(b, `\v`...)
	}
	if r < 0x20 {
		return appendByte(b, byte(r))
	}
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// appendByte appends c, a byte that is not UTF-8 (or a C0 control), as \xNN.
func appendByte(b []byte, c byte) []byte { return append(b, '\\', 'x', hex[c>>4], hex[c&0xf]) }

// plain says whether s needs no escape: printable ASCII only, and \n and
// \t where lines lets them through.
func plain[S string | []byte](s S, lines bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c >= 0x7f) && !(lines && (c == '\n' || c == '\t')) {
			return false
		}
	}
	return true
}

// appendText appends s with every Control rune and every byte that is not
// UTF-8 escaped; lines lets \n and \t through. With partial it stops
// before an incomplete UTF-8 sequence at the very end, which the next
// write may complete. It returns how much of s it took.
func appendText(b, s []byte, lines, partial bool) ([]byte, int) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c < 0x7f || lines && (c == '\n' || c == '\t') {
				b = append(b, c)
			} else {
				b = appendRune(b, rune(c))
			}
			i++
			continue
		}
		if partial && !utf8.FullRune(s[i:]) {
			return b, i
		}
		r, n := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = appendByte(b, c)
		case Control(r):
			b = appendRune(b, r)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b, len(s)
}

// Text is s as a terminal may show it: every control character (\n and
// \t included: a message from elsewhere is shown on one line), DEL, C1
// control, bidirectional override and byte that is not UTF-8 escaped.
// Printable text in any script is unchanged, and so is s when it holds
// nothing to escape. Text(Text(s)) == Text(s).
func Text(s string) string {
	if plain(s, false) {
		return s
	}
	b, _ := appendText(make([]byte, 0, len(s)+16), []byte(s), false, false)
	return string(b)
}

// OneLine is s with every run of white space (newlines and tabs
// included) made one space, and none at either end: a driver's or an
// agent's multi-line error said on one line, before Text escapes what is
// left.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Quote is s in double quotes, escaped as Text does and with its own
// quotes and backslashes escaped too, cut at MaxQuoted runes (marked …):
// how the words of a peer that has not proved who it is are shown, so
// that they cannot pass for narrows' own.
func Quote(s string) string {
	if utf8.RuneCountInString(s) > MaxQuoted {
		cut := 0
		for range MaxQuoted {
			_, n := utf8.DecodeRuneInString(s[cut:])
			cut += n
		}
		s = s[:cut] + "…"
	}
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
	return `"` + Text(s) + `"`
}

// Clean applies Text to every string reachable from v, a pointer (a
// struct's fields, a slice's elements, a map's keys and values, through
// pointers), in place: a message from a peer made safe where it is
// received, so that what is kept of it (a saved run) is safe too. It
// leaves []byte alone (tokens, proofs).
func Clean(v any) {
	clean(reflect.ValueOf(v))
}

func clean(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			clean(v.Elem())
		}
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); !plain(s, false) {
				v.SetString(Text(s))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				clean(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			clean(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			clean(k)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			clean(e)
			out.SetMapIndex(k, e)
		}
		v.Set(out)
	}
}

// Writer escapes, as Text does, whatever passes through it on its way to
// w, except \n and \t: the backstop under a terminal's streams, so that no
// call site can forget. A UTF-8 sequence split between two writes is held
// back (at most 3 bytes) until its end arrives; Flush writes what is still
// held. It is safe for concurrent use. What must draw on the terminal
// itself (a progress line's \r) writes beside it, not through it.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte // the start of a UTF-8 sequence a write ended in
	buf  []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p, escaped, and returns len(p) when the write to w succeeded.
func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.held) == 0 && plain(p, true) {
		return t.w.Write(p)
	}
	data := p
	if len(t.held) > 0 {
		data = append(t.held, p...)
		t.held = nil
	}
	out, done := appendText(t.buf[:0], data, true, true)
	if done < len(data) {
		t.held = append([]byte(nil), data[done:]...)
	}
	if cap(out) <= 64<<10 {
		t.buf = out
	}
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a UTF-8 sequence still held back, which no write ended:
// its bytes, escaped.
func (t *Writer) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.held) == 0 {
		return nil
	}
	var out []byte
	for _, c := range t.held {
		out = appendByte(out, c)
	}
	t.held = nil
	_, err := t.w.Write(out)
	return err
}
