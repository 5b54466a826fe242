package dbconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/narrows/narrows/internal/untrusted"
)

// RawQuery is one query sent and read on the session's own socket in the
// engine's own protocol, with no driver code between the calls: one
// simple-query message for PostgreSQL (as libpq sends psql's and
// pgbench -M simple's), one COM_QUERY for MySQL and MariaDB (as the C
// client does). What runs between a query's two calls is what a C
// client runs, so a thread that blocks in them idles its CPU as libpq's
// does: the CPU wake-up experiment times a database's queries so, where
// the drivers' session (db ping's) hid most of the cost (0.43 of
// pgbench's gain and 0.60 of mariadb-slap's on this project's VMs).
//
// The server is not trusted: an answer is read whole or refused, at most
// maxRawAnswer bytes, each call bounded by the deadline the caller sets
// on Sock; a server's error is named by its kind, never by its text.
type RawQuery struct {
	// Sock is the session's socket (blocking in the kernel when the
	// session was opened with Options.Blocking).
	Sock net.Conn
	msg  []byte
	read func(*rawReader) error
	quit []byte // the engine's goodbye, sent by Close
}

// maxRawAnswer is the most a raw query's answer may take: SELECT 1's is
// tens of bytes.
const maxRawAnswer = 64 << 10

// ErrRawTLS: the session is encrypted, and the raw query speaks on the
// socket beneath the driver.
var ErrRawTLS = errors.New("the session is encrypted (TLS), and the experiment speaks the protocol itself on the socket: give a DSN without TLS (MySQL: tls=false) to a server on this host or a trusted network")

// Raw takes the session's socket over for query q: after it, the session
// is the RawQuery's alone (Close ends it). SQL Server has none.
func (c *Conn) Raw(q string) (*RawQuery, error) {
	switch c.DSN.Engine {
	case Postgres:
		var sock net.Conn
		err := c.Conn.Raw(func(dc any) error {
			sc, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("unexpected driver connection %T", dc)
			}
			h, err := sc.Conn().PgConn().Hijack()
			if err != nil {
				return err
			}
			sock = h.Conn
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("taking the session's socket: %w", err)
		}
		return &RawQuery{Sock: sock, msg: pgMessage('Q', append([]byte(q), 0)), read: readPGAnswer, quit: pgMessage('X', nil)}, nil
	case MySQL:
		if c.Phases.TLSUsed {
			return nil, ErrRawTLS
		}
		sock := c.NetConn()
		if sock == nil {
			return nil, errors.New("the session has no socket")
		}
		return &RawQuery{Sock: sock, msg: myPacket(0, append([]byte{0x03}, q...)), read: readMyAnswer, quit: myPacket(0, []byte{0x01})}, nil
	default:
		return nil, fmt.Errorf("%s: no raw query (its protocol, TDS, is the driver's alone here)", c.DSN.Engine.Name())
	}
}

// Do sends the query and reads its whole answer into r (kept between
// queries: it grows to maxRawAnswer at most).
func (q *RawQuery) Do(r *RawBuffer) error {
	if _, err := q.Sock.Write(q.msg); err != nil {
		return err
	}
	rr := rawReader{sock: q.Sock, b: r}
	return q.read(&rr)
}

// Close says goodbye to the server as its clients do and closes the
// socket.
func (q *RawQuery) Close() {
	q.Sock.SetWriteDeadline(time.Now().Add(time.Second)) //nolint:errcheck // best effort: the socket closes anyway
	q.Sock.Write(q.quit)                                 //nolint:errcheck // best effort
	q.Sock.Close()
}

// RawBuffer is the room a RawQuery's answers are read into, kept between
// queries.
type RawBuffer struct {
	b         []byte
	have, off int
}

// rawReader reads an engine's messages from sock into a RawBuffer.
type rawReader struct {
	sock net.Conn
	b    *RawBuffer
	read int // bytes read for this answer
}

// errRawTooBig: the answer ran past maxRawAnswer.
var errRawTooBig = fmt.Errorf("the server's answer to the query ran past %d KiB: not the answer to SELECT 1", maxRawAnswer>>10)

// next returns the next n bytes, reading as needed.
func (r *rawReader) next(n int) ([]byte, error) {
	b := r.b
	if n > maxRawAnswer {
		return nil, errRawTooBig
	}
	for b.have-b.off < n {
		if b.off > 0 {
			copy(b.b, b.b[b.off:b.have])
			b.have -= b.off
			b.off = 0
		}
		if len(b.b) < max(n, 4<<10) {
			nb := make([]byte, min(maxRawAnswer, max(2*len(b.b), n, 4<<10)))
			copy(nb, b.b[:b.have])
			b.b = nb
		}
		m, err := r.sock.Read(b.b[b.have:])
		if m > 0 {
			b.have += m
			if r.read += m; r.read > maxRawAnswer {
				return nil, errRawTooBig
			}
		}
		if err != nil {
			return nil, err
		}
	}
	p := b.b[b.off : b.off+n]
	b.off += n
	return p, nil
}

// done ends an answer. What followed it stays for the next (PostgreSQL
// may send a notice or a parameter's new value at any time); unless
// strict (MySQL sends nothing unasked), when it is an error.
func (r *rawReader) done(strict bool) error {
	if left := r.b.have - r.b.off; left != 0 && strict {
		return fmt.Errorf("the server sent %d bytes after the query's answer", left)
	}
	if r.b.have == r.b.off {
		r.b.have, r.b.off = 0, 0
	}
	return nil
}

// pgMessage is a frontend message: its type, its length, its body.
func pgMessage(t byte, body []byte) []byte {
	m := make([]byte, 5, 5+len(body))
	m[0] = t
	binary.BigEndian.PutUint32(m[1:], uint32(4+len(body)))
	return append(m, body...)
}

// readPGAnswer reads PostgreSQL's answer to a simple query: its messages
// up to ReadyForQuery ('Z'); an ErrorResponse ('E') among them is the
// query's failure, named by its SQLSTATE.
func readPGAnswer(r *rawReader) error {
	var failed error
	for {
		h, err := r.next(5)
		if err != nil {
			return err
		}
		t, n := h[0], int(binary.BigEndian.Uint32(h[1:]))
		if n < 4 {
			return fmt.Errorf("the server sent a message (%s) of length %d: not PostgreSQL's protocol", untrusted.Quote(string([]byte{t})), n)
		}
		body, err := r.next(n - 4)
		if err != nil {
			return err
		}
		switch t {
		case 'E':
			failed = fmt.Errorf("the server answered the query with an error (SQLSTATE %s)", pgSQLState(body))
		case 'Z':
			r.done(false) //nolint:errcheck // never fails unstrict
			return failed
		}
	}
}

// pgSQLState is an ErrorResponse's code field ('C'), five safe
// characters or "?".
func pgSQLState(body []byte) string {
	for len(body) > 1 {
		f := body[0]
		end := 1
		for end < len(body) && body[end] != 0 {
			end++
		}
		if f == 'C' && end-1 == 5 {
			code := body[1:end]
			for _, ch := range code {
				if !(ch >= '0' && ch <= '9' || ch >= 'A' && ch <= 'Z') {
					return "?"
				}
			}
			return string(code)
		}
		if end >= len(body) {
			break
		}
		body = body[end+1:]
	}
	return "?"
}

// myPacket is a MySQL packet: three bytes of length, its sequence number,
// its payload.
func myPacket(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// readMyPacket reads one packet's payload.
func readMyPacket(r *rawReader) ([]byte, error) {
	h, err := r.next(4)
	if err != nil {
		return nil, err
	}
	return r.next(int(h[0]) | int(h[1])<<8 | int(h[2])<<16)
}

// isMyEOF says whether p ends a list of columns or rows: an EOF packet,
// or the OK packet that replaces it (0xfe, shorter than a row can be
// with that first byte: a row's lenenc string of 0xfe would be 8 bytes
// of length and more).
func isMyEOF(p []byte) bool { return len(p) > 0 && p[0] == 0xfe && len(p) < 9 }

// isMyOldEOF says whether an end packet is the EOF packet of a server
// that sends one after the column definitions (0xfe, 2 bytes of
// warnings, 2 of status: 5 bytes), not the OK packet that ends a result
// set where the client asked for none (CLIENT_DEPRECATE_EOF: 0xfe, two
// length-encoded integers, status and warnings: 7 bytes or more). The
// driver asks for that; the server decides, and only this tells them
// apart when no row follows.
func isMyOldEOF(p []byte) bool { return isMyEOF(p) && len(p) == 5 }

// readMyAnswer reads MySQL's answer to COM_QUERY: an OK (no rows), an
// error, or a result set: the column count, the columns' definitions, an
// EOF unless the server left it out, the rows, and an EOF or OK.
func readMyAnswer(r *rawReader) error {
	p, err := readMyPacket(r)
	if err != nil {
		return err
	}
	switch {
	case len(p) == 0:
		return errors.New("the server sent an empty packet: not MySQL's protocol")
	case p[0] == 0x00:
		return r.done(true)
	case p[0] == 0xff:
		r.done(true) //nolint:errcheck // the error is the answer
		return fmt.Errorf("the server answered the query with an error (%s)", myErrCode(p))
	}
	cols := int(p[0])
	if cols == 0 || cols > 250 {
		return fmt.Errorf("the server announced %d columns: not the answer to a short query", cols)
	}
	for range cols {
		if _, err := readMyPacket(r); err != nil {
			return err
		}
	}
	if p, err = readMyPacket(r); err != nil {
		return err
	}
	if isMyOldEOF(p) {
		// The EOF after the definitions (a server that still sends one):
		// the rows follow, and an EOF after them.
		if p, err = readMyPacket(r); err != nil {
			return err
		}
	}
	for !isMyEOF(p) {
		if len(p) > 0 && p[0] == 0xff {
			r.done(true) //nolint:errcheck // the error is the answer
			return fmt.Errorf("the server answered the query with an error (%s)", myErrCode(p))
		}
		if p, err = readMyPacket(r); err != nil {
			return err
		}
	}
	return r.done(true)
}

// myErrCode is an error packet's code.
func myErrCode(p []byte) string {
	if len(p) < 3 {
		return "no code"
	}
	return fmt.Sprintf("error %d", binary.LittleEndian.Uint16(p[1:3]))
}
