// Package hostile is the far side the tests play: a fake agent on a real
// socket that speaks narrows' protocol as the real one does (the
// handshake with the itest secret, tests, their data connections) and
// then misbehaves as its Mode says, so that every client command that
// reaches an agent can be held to its bounds: time, memory, output, exit,
// and what reaches the terminal. Test code only; it measures nothing,
// and it is the only fake agent the tests may use.
package hostile

import (
	"encoding/json"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// Mode is what the agent does wrong; modes combine with |.
type Mode uint

const (
	// Honest answers as an agent does: intervals every interval, Done at
	// the end or on Stop. The other modes are departures from it.
	Honest Mode = 0
	// Endless: after Start, Interval frames as fast as the socket takes
	// them (a record for far kinds, slots for stream and rr), never Done;
	// Stop is ignored.
	Endless Mode = 1 << iota
	// Drip: after Start, a "prepare" Interval every DripEvery, forever;
	// the data connections get nothing; Stop is ignored.
	Drip
	// Silent: after Start, nothing ever, on any connection; Stop is
	// ignored; the connections are held open.
	Silent
	// NoDoneAfterStop: honest until Stop, then intervals forever and
	// never Done.
	NoDoneAfterStop
	// Escapes: every string the agent sends carries Nasty: its software,
	// facts, the disk target and notes, records, Done.Reason (so that an
	// honest run ends in an error whose words are the agent's).
	Escapes
	// PreAuthRefusal: a Hello is answered with an Error frame (code
	// Config.Refusal) whose message carries Nasty and whose RetryAfter and
	// versions are absurd.
	PreAuthRefusal
	// HugeFacts: the Welcome's facts fill its frame to just under
	// wire.MaxFrame.
	HugeFacts
	// OversizedWelcome: in place of the Welcome, a frame header that
	// declares more than wire.MaxFrame, then nothing.
	OversizedWelcome
)

// Nasty is what Escapes puts in every string: a clipboard write (OSC
// 52), a window title (OSC 0), a screen clear (CSI 2J), a carriage
// return, a C1 CSI and a right-to-left override.
const Nasty = "\x1b]52;c;aGVsbG8=\x07\x1b]0;title\x07\x1b[2J\r\u009b\u202e"

// DripEvery is Drip's pace: inside any client's wait for the next frame.
const DripEvery = 900 * time.Millisecond

// Config says how the agent misbehaves.
type Config struct {
	Mode Mode
	// Refusal is the code of a PreAuthRefusal (default wire.CodeBusy).
	Refusal string
	// MaxDuration is the limit announced in the Welcome (default 10 min).
	MaxDuration time.Duration
}

// DiskPath is the one directory the agent allows disk tests in.
const DiskPath = "/srv/data"

// Agent is a running fake agent.
type Agent struct {
	Addr    string
	cfg     Config
	ln      net.Listener
	started chan struct{}
	once    sync.Once
	quit    chan struct{} // closed when the test ends

	mu      sync.Mutex
	pending map[string]chan net.Conn
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
}

// Start starts an agent that misbehaves as m says, and returns its address.
func Start(t testing.TB, m Mode) string { return New(t, Config{Mode: m}).Addr }

// New starts an agent on 127.0.0.1:0; the test's end stops it and closes
// every connection.
func New(t testing.TB, cfg Config) *Agent {
	t.Helper()
	if cfg.Refusal == "" {
		cfg.Refusal = wire.CodeBusy
	}
	if cfg.MaxDuration == 0 {
		cfg.MaxDuration = 10 * time.Minute
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{Addr: ln.Addr().String(), cfg: cfg, ln: ln, started: make(chan struct{}), quit: make(chan struct{}),
		pending: map[string]chan net.Conn{}, conns: map[net.Conn]bool{}}
	a.wg.Add(1)
	go a.accept()
	t.Cleanup(a.close)
	return a
}

// Started is closed once a client has started a test.
func (a *Agent) Started() <-chan struct{} { return a.started }

func (a *Agent) close() {
	close(a.quit)
	a.ln.Close()
	a.mu.Lock()
	for c := range a.conns {
		c.Close()
	}
	a.conns = nil
	a.mu.Unlock()
	a.wg.Wait()
}

func (a *Agent) accept() {
	defer a.wg.Done()
	for {
		c, err := a.ln.Accept()
		if err != nil {
			return
		}
		a.mu.Lock()
		if a.conns == nil {
			a.mu.Unlock()
			c.Close()
			return
		}
		a.conns[c] = true
		a.wg.Add(1)
		a.mu.Unlock()
		go func() {
			defer a.wg.Done()
			if !a.handle(c) {
				c.Close()
			}
		}()
	}
}

func (a *Agent) has(m Mode) bool { return a.cfg.Mode&m != 0 }

// s is a string the agent sends: with Escapes, it carries Nasty.
func (a *Agent) s(x string) string {
	if a.has(Escapes) {
		return x + Nasty
	}
	return x
}

// handle serves one connection; it returns true when a test took the
// connection over (a data connection), which then closes it.
func (a *Agent) handle(c net.Conn) bool {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var h wire.Hello
	if wire.ReadMagic(c) != nil || wire.Expect(c, wire.THello, &h) != nil {
		return false
	}
	if h.Role == wire.RoleData {
		return a.attach(c, h.Token)
	}
	if a.has(PreAuthRefusal) {
		wire.WriteFrame(c, wire.TError, wire.RemoteError{Code: a.cfg.Refusal, Message: "go away" + Nasty + strings.Repeat("\x1b[1A", 64),
			RetryAfter: math.MaxInt64, MinVersion: -1 << 40, MaxVersion: 1 << 40})
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 4<<10))
		return false
	}
	if !a.handshake(c, h) {
		return false
	}
	// One reader for the rest of the session: the tests see its frames.
	c.SetDeadline(time.Time{})
	frames := make(chan wire.Frame)
	go func() {
		defer close(frames)
		for {
			f, err := wire.ReadFrame(c)
			if err != nil {
				return
			}
			frames <- f
		}
	}()
	defer func() {
		c.Close()
		for range frames {
		}
	}()
	for f := range frames {
		var spec wire.TestSpec
		if f.Decode(wire.TTest, &spec) != nil || !a.test(c, frames, spec) {
			return true
		}
	}
	return true
}

func (a *Agent) handshake(c net.Conn, h wire.Hello) bool {
	session, nonce := "hostile", wire.NewNonce()
	caps := []string{wire.KindCapability(wire.KindCommit), wire.KindCapability(wire.KindCPU), wire.KindCapability(wire.KindDisk)}
	if wire.WriteFrame(c, wire.TChalleng, wire.Challenge{Version: wire.Version, Capabilities: caps, Session: session,
		Nonce: nonce, AuthRequired: true, Software: a.s("0.0.0-hostile")}) != nil {
		return false
	}
	var auth wire.Auth
	if wire.Expect(c, wire.TAuth, &auth) != nil {
		return false
	}
	secret := []byte(itest.Secret)
	if !wire.Verify(secret, "client", session, h.Nonce, nonce, auth.MAC) {
		wire.WriteFrame(c, wire.TError, wire.RemoteError{Code: wire.CodeAuth, Message: "authentication failed"})
		return false
	}
	if a.has(OversizedWelcome) {
		c.Write([]byte{0xff, 0xff, 0xff, 0xff, byte(wire.TWelcome)})
		io.Copy(io.Discard, c) // and nothing more, until the client goes
		return false
	}
	w := wire.Welcome{MAC: wire.Proof(secret, "agent", session, h.Nonce, nonce), Facts: a.facts(),
		Limits: wire.Limits{MaxTests: 4, MaxDuration: a.cfg.MaxDuration, MaxStreams: 64, MaxBlock: 16 << 20, MaxDataConns: 64,
			MaxTestMemory: 256 << 20, DiskPaths: []string{DiskPath}, MaxDiskSize: 1 << 40}}
	if a.has(HugeFacts) {
		fill(&w)
	}
	return wire.WriteFrame(c, wire.TWelcome, w) == nil
}

func (a *Agent) facts() *result.Facts {
	return &result.Facts{Hostname: a.s("hostile"), OS: "linux", Kernel: a.s("6.1.0-hostile"), CPU: a.s("Hostile CPU @ 2.0GHz"),
		Cores: 2, MemoryBytes: 8 << 30, Narrows: a.s("0.0.0-hostile"),
		Interfaces: []result.NIC{{Name: a.s("eth0"), Driver: a.s("virtio_net"), DriverVersion: a.s("1.0.0"), Firmware: a.s("n/a"),
			MTU: 1500, SpeedMbps: 10000, Addresses: []string{a.s("127.0.0.1/8")}, Offloads: map[string]bool{a.s("tso"): true}}},
		TCP: &result.TCPSettings{CongestionControl: a.s("cubic"), RmemMax: 6 << 20, WmemMax: 4 << 20}}
}

// fill pads w's facts with missing-fact notes until its frame is within
// a few bytes of wire.MaxFrame.
func fill(w *wire.Welcome) {
	size := func() int { b, _ := json.Marshal(w); return len(b) }
	for size() < wire.MaxFrame-2048 {
		w.Facts.Missing = append(w.Facts.Missing, strings.Repeat("m", 1000))
	}
	last := len(w.Facts.Missing)
	w.Facts.Missing = append(w.Facts.Missing, "")
	w.Facts.Missing[last] = strings.Repeat("m", wire.MaxFrame-size()-16)
}

// attach hands a data connection to the test waiting for its token.
func (a *Agent) attach(c net.Conn, token []byte) bool {
	a.mu.Lock()
	ch, ok := a.pending[string(token)]
	delete(a.pending, string(token))
	a.mu.Unlock()
	if !ok || wire.WriteFrame(c, wire.TReady, wire.Ready{}) != nil {
		return false
	}
	c.SetDeadline(time.Time{})
	ch <- c
	return true
}

// slotRoles are a test's data connections, as the real agent plans them.
func slotRoles(spec wire.TestSpec) []string {
	switch spec.Kind {
	case wire.KindRR:
		return []string{wire.SlotEcho}
	case wire.KindCommit:
		return []string{wire.SlotLog}
	case wire.KindStream:
		var r []string
		for range spec.Streams {
			if spec.Direction != wire.Reverse {
				r = append(r, wire.SlotSink)
			}
			if spec.Direction != wire.Forward {
				r = append(r, wire.SlotSource)
			}
		}
		return r
	}
	return nil
}

func (a *Agent) target(spec wire.TestSpec) *result.Disk {
	d := &result.Disk{Path: DiskPath, Filesystem: a.s("ext4"), Engine: "portable", EngineNote: a.s("io_uring is off here"), Patterns: []result.DiskPattern{}}
	switch {
	case spec.Disk != nil:
		d.Path, d.FileBytes, d.Direct = spec.Disk.Path, spec.Disk.Size, !spec.Disk.Buffered
	case spec.Commit != nil && spec.Commit.Path != "":
		d.Path, d.FileBytes = spec.Commit.Path, spec.Commit.Size
	}
	d.Path = a.s(d.Path)
	return d
}

// test runs one test on the control connection c; false ends the session.
func (a *Agent) test(c net.Conn, frames <-chan wire.Frame, spec wire.TestSpec) bool {
	roles := slotRoles(spec)
	acc := wire.Accepted{TestID: "hostile", Slots: make([]wire.Slot, len(roles))}
	waits := make([]chan net.Conn, len(roles))
	a.mu.Lock()
	for i, r := range roles {
		tok := wire.NewNonce()[:16]
		acc.Slots[i], waits[i] = wire.Slot{ID: i, Role: r, Token: tok}, make(chan net.Conn, 1)
		a.pending[string(tok)] = waits[i]
	}
	a.mu.Unlock()
	if spec.Kind == wire.KindDisk || spec.Kind == wire.KindCommit && spec.Commit != nil && spec.Commit.Ack != result.AckReceive {
		acc.Disk = &wire.DiskAccepted{Target: a.target(spec), Notes: []string{a.s("the test file has no name: nothing outlives the test")}}
	}
	if wire.WriteFrame(c, wire.TAccepted, acc) != nil {
		return false
	}
	data := make([]net.Conn, len(roles))
	defer func() {
		for _, d := range data {
			if d != nil {
				d.Close()
			}
		}
	}()
	for i := range waits {
		select {
		case data[i] = <-waits[i]:
		case <-time.After(10 * time.Second):
			return false
		case <-a.quit:
			return false
		}
	}
	if f, ok := <-frames; !ok || f.Decode(wire.TStart, &wire.Start{}) != nil {
		return false
	}
	a.once.Do(func() { close(a.started) })
	r := &run{a: a, c: c, frames: frames, spec: spec, roles: roles, data: data, start: time.Now(), counts: make([]atomic.Int64, len(roles))}
	switch {
	case a.has(Silent):
		r.serveData(false)
		for range frames { // until the client goes
		}
		return false
	case a.has(Drip):
		r.serveData(false)
		return r.flood(DripEvery, func() wire.Interval { return wire.Interval{Stage: wire.StagePrepare} })
	case a.has(Endless):
		r.serveData(true)
		return r.flood(0, r.report)
	}
	return r.honest()
}
