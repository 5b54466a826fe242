package dbconn

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// pgAnswer is PostgreSQL 15's answer to SELECT 1, as a simple query:
// RowDescription, DataRow, CommandComplete, ReadyForQuery.
func pgAnswer() []byte {
	var b []byte
	row := []byte{0, 1}
	row = append(row, "?column?\x00"...)
	row = append(row, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 4, 0xff, 0xff, 0xff, 0xff, 0, 0)
	b = append(b, pgMessage('T', row)...)
	b = append(b, pgMessage('D', []byte{0, 1, 0, 0, 0, 1, '1'})...)
	b = append(b, pgMessage('C', []byte("SELECT 1\x00"))...)
	return append(b, pgMessage('Z', []byte{'I'})...)
}

// myAnswer is a MySQL result set for SELECT 1, with the EOF after the
// column definitions (eof) or without it (CLIENT_DEPRECATE_EOF).
func myAnswer(eof bool) []byte {
	var b []byte
	seq := byte(1)
	add := func(p []byte) { b = append(b, myPacket(seq, p)...); seq++ }
	add([]byte{1})
	add(append([]byte{3, 'd', 'e', 'f'}, make([]byte, 20)...)) // a column definition
	if eof {
		add([]byte{0xfe, 0, 0, 2, 0})
	}
	add([]byte{1, '1'})
	add(myEnd(eof))
	return b
}

// myEnd is what ends a MySQL result set: the EOF packet (5 bytes), or
// under CLIENT_DEPRECATE_EOF the OK packet with 0xfe first (7 bytes).
func myEnd(eof bool) []byte {
	if eof {
		return []byte{0xfe, 0, 0, 2, 0}
	}
	return []byte{0xfe, 0, 0, 2, 0, 0, 0}
}

// myNoRows is a result set of one column and no row, both ways.
func myNoRows(eof bool) []byte {
	var b []byte
	b = append(b, myPacket(1, []byte{1})...)
	b = append(b, myPacket(2, append([]byte{3, 'd', 'e', 'f'}, make([]byte, 20)...))...)
	if eof {
		b = append(b, myPacket(3, myEnd(true))...)
		return append(b, myPacket(4, myEnd(true))...)
	}
	return append(b, myPacket(3, myEnd(false))...)
}

// serve answers each query on a pipe with the next of answers, in
// chunks of chunk bytes (0: whole), then closes; it reads queries as they
// come (the pipe holds nothing), one answer per query.
func serve(t *testing.T, answers [][]byte, chunk int) net.Conn {
	t.Helper()
	c, s := net.Pipe()
	asked := make(chan struct{}, 16)
	go func() {
		buf := make([]byte, 1024)
		for {
			if _, err := s.Read(buf); err != nil {
				close(asked)
				return
			}
			asked <- struct{}{}
		}
	}()
	go func() {
		defer s.Close()
		for _, a := range answers {
			if _, ok := <-asked; !ok {
				return
			}
			for len(a) > 0 {
				n := len(a)
				if chunk > 0 {
					n = min(n, chunk)
				}
				if _, err := s.Write(a[:n]); err != nil {
					return
				}
				a = a[n:]
			}
		}
	}()
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRawAnswers(t *testing.T) {
	pgErr := pgMessage('E', []byte("SERROR\x00C42601\x00Msyntax \x1b[31merror\x07\x00\x00"))
	pgErr = append(pgErr, pgMessage('Z', []byte{'I'})...)
	huge := pgMessage('D', nil)
	binary.BigEndian.PutUint32(huge[1:], 1<<30)
	myErr := myPacket(1, append([]byte{0xff, 0x28, 0x04, '#'}, "42000\x1b]0;pwned\x07"...))
	tooMany := myPacket(1, []byte{251})
	for _, tc := range []struct {
		name   string
		read   func(*rawReader) error
		answer []byte
		want   string // "" : no error; else what the error says (one of a|b)
	}{
		{"pg SELECT 1", readPGAnswer, pgAnswer(), ""},
		{"pg error named by SQLSTATE only", readPGAnswer, pgErr, "SQLSTATE 42601"},
		{"pg message of a GiB", readPGAnswer, huge, "ran past 64 KiB"},
		{"pg length under 4", readPGAnswer, []byte{'Z', 0, 0, 0, 2}, "not PostgreSQL's protocol"},
		{"pg a notice after the answer (kept for the next)", readPGAnswer, append(pgAnswer(), pgMessage('N', []byte("SNOTICE\x00\x00"))...), ""},
		{"mysql bytes after the answer", readMyAnswer, append(myAnswer(true), 0, 0, 0, 9), "after the query's answer|empty packet"},
		{"pg answer cut short: the deadline ends the wait", readPGAnswer, pgAnswer()[:20], "i/o timeout"},
		{"mysql with EOF", readMyAnswer, myAnswer(true), ""},
		{"mysql deprecate EOF", readMyAnswer, myAnswer(false), ""},
		{"mysql OK", readMyAnswer, myPacket(1, []byte{0, 0, 0, 2, 0, 0, 0}), ""},
		// No row: the OK that ends it (deprecate EOF) is not taken for
		// the EOF after the definitions (the read would wait for rows).
		{"mysql no rows with EOF", readMyAnswer, myNoRows(true), ""},
		{"mysql no rows deprecate EOF", readMyAnswer, myNoRows(false), ""},
		{"mysql error named by code only", readMyAnswer, myErr, "error 1064"},
		{"mysql 251 columns", readMyAnswer, tooMany, "251 columns"},
		{"mysql empty packet", readMyAnswer, myPacket(1, nil), "empty packet"},
		{"mysql rows past 64 KiB", readMyAnswer, append(myAnswer(true)[:len(myAnswer(true))-9], myPacket(4, make([]byte, 70<<10))...), "ran past 64 KiB"},
	} {
		for _, chunk := range []int{0, 1} {
			c := serve(t, [][]byte{tc.answer, tc.answer}, chunk)
			c.SetDeadline(time.Now().Add(500 * time.Millisecond))
			q := &RawQuery{Sock: c, msg: []byte("Q"), read: tc.read}
			// Two queries: what follows an answer shows in the next one's
			// when it arrives late (chunk 1).
			var rb RawBuffer
			var err error
			for i := 0; i < 2 && err == nil; i++ {
				err = q.Do(&rb)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%s (chunk %d): %v", tc.name, chunk, err)
			case tc.want != "" && (err == nil || !slices.ContainsFunc(strings.Split(tc.want, "|"), func(w string) bool { return strings.Contains(err.Error(), w) })):
				t.Fatalf("%s (chunk %d): got %v, want an error saying %q", tc.name, chunk, err, tc.want)
			case err != nil && strings.ContainsFunc(err.Error(), func(r rune) bool { return r < 0x20 || r == 0x7f }):
				t.Fatalf("%s: the error carries the server's control characters: %q", tc.name, err)
			case err != nil && strings.Contains(err.Error(), "pwned"):
				t.Fatalf("%s: the error carries the server's text: %q", tc.name, err)
			}
		}
	}
}

// TestRawBufferBounded: the buffer never grows past maxRawAnswer, however
// the answer is cut.
func TestRawBufferBounded(t *testing.T) {
	c := serve(t, [][]byte{append(pgMessage('D', make([]byte, 60<<10)), pgMessage('Z', []byte{'I'})...)}, 1000)
	q := &RawQuery{Sock: c, msg: []byte("Q"), read: readPGAnswer}
	var rb RawBuffer
	if err := q.Do(&rb); err != nil {
		t.Fatal(err)
	}
	if len(rb.b) > maxRawAnswer {
		t.Fatalf("the buffer grew to %d bytes, past %d", len(rb.b), maxRawAnswer)
	}
	if err := q.Do(&rb); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("a second query on a closed server: %v", err)
	}
}
