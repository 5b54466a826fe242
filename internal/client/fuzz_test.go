package client_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// FuzzClientReaders plays an agent whose frames are the fuzzer's bytes,
// on a real loopback socket, to the client's two readers: the handshake
// (Dial), and a test's reports (RunFar's Next loop, after a handshake
// and a test spec the agent answers truly). Whatever the bytes, the
// client must not panic, must return once they run out (the agent then
// closes its side), and must not allocate more than the bytes can be
// worth: a header may declare any size, but no frame is ever held past
// wire.MaxFrame. The first byte of the input picks the reader.
func FuzzClientReaders(f *testing.F) {
	frames := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	for _, seed := range [][]byte{
		// The handshake.
		append([]byte{0}, frames(frame(wire.TChalleng, wire.Challenge{Version: wire.Version, Session: "s", Nonce: make([]byte, wire.NonceSize), AuthRequired: true}),
			frame(wire.TWelcome, wire.Welcome{MAC: make([]byte, 32), Limits: wire.Limits{MaxTests: 1}, Facts: &result.Facts{Hostname: "h"}}))...),
		append([]byte{0}, frame(wire.TError, wire.RemoteError{Code: wire.CodeBusy, Message: "busy\x1b[2J", RetryAfter: 1 << 62})...),
		append([]byte{0}, frame(wire.TError, wire.RemoteError{Code: wire.CodeVersion, MinVersion: -1, MaxVersion: 1 << 40})...),
		{0, 0xff, 0xff, 0xff, 0xff, byte(wire.TChalleng)},
		{0, 0, 1, 0, 1, byte(wire.TChalleng), '{'},
		append([]byte{0}, "HTTP/1.1 400 Bad Request\r\n\r\n"...),
		// A test's reports.
		append([]byte{1}, frames(frame(wire.TAccepted, wire.Accepted{TestID: "t", Slots: []wire.Slot{}}),
			frame(wire.TInterval, wire.Interval{Stage: wire.StagePrepare}),
			frame(wire.TInterval, wire.Interval{Index: 1, Record: &result.Interval{Probe: "disk", Disk: &result.DiskInterval{Pattern: "p"}}}),
			frame(wire.TInterval, wire.Interval{Index: 2, Slots: []wire.SlotSample{{Slot: 0, Bytes: 1 << 62}}}),
			frame(wire.TDone, wire.Done{Reason: "r", Disk: &result.Disk{Path: "/x"}}))...),
		append([]byte{1}, frames(frame(wire.TAccepted, wire.Accepted{TestID: "t"}),
			frame(wire.TError, wire.RemoteError{Code: wire.CodeInternal, Message: "no"}))...),
		append([]byte{1}, frames(frame(wire.TAccepted, wire.Accepted{TestID: "t"}), []byte{0x7f, 0xff, 0xff, 0xff, byte(wire.TInterval)})...),
		append([]byte{1}, frames(frame(wire.TAccepted, wire.Accepted{TestID: "t"}), []byte{0, 0, 0, 2, byte(wire.TDone), '{', '}'})...),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Skip(err)
		}
		defer ln.Close()
		go agentOf(ln, data[0]%2 == 1, data[1:])
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx := context.Background()
			s, err := client.Dial(ctx, client.Options{Addr: ln.Addr().String(), Secret: fuzzSecret, Timeout: 2 * time.Second})
			if err != nil {
				return
			}
			defer s.Close()
			n := 0
			s.RunFar(ctx, wire.TestSpec{Kind: wire.KindCPU, Duration: time.Second, Interval: 100 * time.Millisecond},
				func(*wire.Accepted) error { return nil }, func(result.Interval) { n++ })
			// Every record came in a frame of its own, at least a header long.
			if n > len(data)/5 {
				t.Errorf("%d records from %d bytes", n, len(data))
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the client still reads 10s after the agent's %d bytes ran out", len(data))
		}
		runtime.ReadMemStats(&after)
		// The bytes, one frame's worth more (a header that promised a body
		// the bytes did not hold), their decoding, and what a session
		// costs besides.
		if most := uint64(2*wire.MaxFrame + 64*len(data) + 4<<20); after.TotalAlloc-before.TotalAlloc > most {
			t.Errorf("the client allocated %d bytes reading %d; want at most %d", after.TotalAlloc-before.TotalAlloc, len(data), most)
		}
	})
}

var fuzzSecret = []byte("fuzz-secret-0123456789")

// frame is a frame's bytes.
func frame(t wire.Type, v any) []byte {
	var b bytes.Buffer
	if err := wire.WriteFrame(&b, t, v); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// agentOf serves one control connection: after the client's Hello it
// writes script and closes its side; with test, it first completes the
// handshake truly and reads the client's test spec. Data connections the
// script's slots make the client open are closed unanswered.
func agentOf(ln net.Listener, test bool, script []byte) {
	c, err := ln.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	go func() { // data connections
		for {
			d, err := ln.Accept()
			if err != nil {
				return
			}
			d.Close()
		}
	}()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var h wire.Hello
	if wire.ReadMagic(c) != nil || wire.Expect(c, wire.THello, &h) != nil {
		return
	}
	if test {
		nonce := wire.NewNonce()
		wire.WriteFrame(c, wire.TChalleng, wire.Challenge{Version: wire.Version, Session: "s", Nonce: nonce, AuthRequired: true,
			Capabilities: []string{wire.KindCapability(wire.KindCPU)}})
		if wire.Expect(c, wire.TAuth, &wire.Auth{}) != nil {
			return
		}
		wire.WriteFrame(c, wire.TWelcome, wire.Welcome{MAC: wire.Proof(fuzzSecret, "agent", "s", h.Nonce, nonce),
			Limits: wire.Limits{MaxTests: 1, MaxDuration: time.Minute}})
		if wire.Expect(c, wire.TTest, &wire.TestSpec{}) != nil {
			return
		}
	}
	c.Write(script)
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c) // until the client closes
}
