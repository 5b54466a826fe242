package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Magic opens every connection to an agent, control or data, so that a
// stray HTTP client or port scanner is told apart at the first read.
const Magic = "NRWS"

// MaxFrame bounds a frame body. Control messages are small JSON; nothing
// legitimate comes near it, and a peer cannot make us allocate more.
const MaxFrame = 64 << 10

// Type is a frame's one-byte kind.
type Type uint8

// The frame types. Numbers are part of the protocol: never reuse one.
const (
	THello    Type = 1 // client → agent: first frame of every connection
	TChalleng Type = 2 // agent → client: version chosen, nonce
	TAuth     Type = 3 // client → agent: proof of the secret
	TWelcome  Type = 4 // agent → client: the agent's own proof, limits
	TError    Type = 5 // either way: a final error; the sender closes
	TTest     Type = 6 // client → agent: run a test
	TAccepted Type = 7 // agent → client: test accepted, data-connection tokens
	TStart    Type = 8 // client → agent: all data connections are open
	TInterval Type = 9 // agent → client: one interval's figures
	TDone     Type = 10
	TStop     Type = 11 // client → agent: end the test now
	TReady    Type = 12 // agent → client on a data connection: attached
	TClock    Type = 13 // client → agent between tests: a clock probe; the agent answers with one
	TGo       Type = 14 // client → agent: a held test starts measuring at the instant it names
)

var typeNames = map[Type]string{
	THello: "hello", TChalleng: "challenge", TAuth: "auth", TWelcome: "welcome",
	TError: "error", TTest: "test", TAccepted: "accepted", TStart: "start",
	TInterval: "interval", TDone: "done", TStop: "stop", TReady: "ready",
	TClock: "clock", TGo: "go",
}

func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// ErrFrameTooLarge is returned for a frame whose declared size exceeds MaxFrame.
var ErrFrameTooLarge = errors.New("wire: frame larger than the maximum")

// ErrBadMagic is returned when a connection does not start with Magic.
var ErrBadMagic = errors.New("wire: not a narrows connection")

// Frame is one decoded frame.
type Frame struct {
	Type Type
	Body []byte
}

// WriteFrame writes one frame with v marshalled as its JSON body.
func WriteFrame(w io.Writer, t Type, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("wire: encode %s: %w", t, err)
	}
	if len(body) > MaxFrame {
		return fmt.Errorf("wire: encode %s: %w", t, ErrFrameTooLarge)
	}
	buf := make([]byte, 5+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	buf[4] = byte(t)
	copy(buf[5:], body)
	_, err = w.Write(buf)
	return err
}

// ReadFrame reads one frame. It never allocates more than MaxFrame.
func ReadFrame(r io.Reader) (Frame, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n > MaxFrame {
		return Frame{}, fmt.Errorf("%w: %d bytes (max %d)", ErrFrameTooLarge, n, MaxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return Frame{Type: Type(hdr[4]), Body: body}, nil
}

// Decode unmarshals the body into v, checking the type first. An Error frame
// where another was expected comes back as *RemoteError.
func (f Frame) Decode(want Type, v any) error {
	if f.Type == TError && want != TError {
		var e RemoteError
		if err := json.Unmarshal(f.Body, &e); err != nil {
			return fmt.Errorf("wire: malformed error frame: %w", err)
		}
		return &e
	}
	if f.Type != want {
		return fmt.Errorf("wire: expected %s frame, got %s", want, f.Type)
	}
	if err := json.Unmarshal(f.Body, v); err != nil {
		return fmt.Errorf("wire: malformed %s frame: %w", want, err)
	}
	return nil
}

// Expect reads one frame and decodes it as want.
func Expect(r io.Reader, want Type, v any) error {
	f, err := ReadFrame(r)
	if err != nil {
		return err
	}
	return f.Decode(want, v)
}

// WriteMagic writes the connection preface.
func WriteMagic(w io.Writer) error {
	_, err := io.WriteString(w, Magic)
	return err
}

// ReadMagic reads and checks the connection preface.
func ReadMagic(r io.Reader) error {
	var b [len(Magic)]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	if string(b[:]) != Magic {
		return ErrBadMagic
	}
	return nil
}
