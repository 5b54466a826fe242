package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// Server is a running agent.
type Server struct {
	cfg      Config
	tests    chan struct{} // semaphore: running tests
	refusing chan struct{} // semaphore: refused connections being told why
	quiet    *quietLog     // what strangers can make the agent say

	mu      sync.Mutex
	memory  int64                   // buffer bytes the running tests hold (Config.MaxMemory)
	admit   admission               // which connections the agent keeps
	pending map[string]*pendingSlot // data-connection token → slot waiting for it
	open    map[net.Conn]*connState // every connection, closed on shutdown
	disks   map[string]fsHolder     // filesystem (fsKey) → the test writing on it (disk.go)
	wg      sync.WaitGroup
}

type pendingSlot struct {
	slot    wire.Slot
	deliver chan net.Conn // buffered, 1; sent on only under Server.mu
	// abandoned is set under Server.mu when the test stops waiting: a
	// connection that arrives after that is not handed over but closed.
	abandoned bool
}

// attachGap, when set (tests only), runs in attach between taking the
// token and handing the connection over: it widens the race with a test
// that gives up.
var attachGap func()

// New returns a server with defaults filled in.
func New(cfg Config) *Server {
	cfg.setDefaults()
	return &Server{
		cfg:      cfg,
		tests:    make(chan struct{}, cfg.MaxTests),
		refusing: make(chan struct{}, maxRefusing),
		quiet:    newQuietLog(cfg.Logger, quietWindow, quietBurst),
		admit:    newAdmission(cfg),
		pending:  make(map[string]*pendingSlot),
		open:     make(map[net.Conn]*connState),
		disks:    make(map[string]fsHolder),
	}
}

// The log under a flood: at most quietBurst lines of one kind per
// quietWindow, then a summary.
const (
	quietWindow = 10 * time.Second
	quietBurst  = 5
)

// Serve accepts connections on ln until ctx is done, then closes ln and
// every connection and waits for every goroutine it started.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	s.cfg.Logger.Info("agent listening", "addr", ln.Addr().String(), "auth", len(s.cfg.Secret) > 0,
		"max_tests", s.cfg.MaxTests, "max_duration", s.cfg.MaxDuration.String(), "disk_paths", s.diskPaths())
	stopFlush, flushed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flushed)
		tick := time.NewTicker(quietWindow)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				s.quiet.Flush(false)
			case <-stopFlush:
				return
			}
		}
	}()
	var err error
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			break
		}
		host := hostOf(c)
		if refusal := s.track(c, host); refusal != nil {
			if refusal == errShutdown {
				c.Close()
				continue
			}
			s.quiet.Log(slog.LevelWarn, "connection refused: "+refusal.Message, host, "remote", c.RemoteAddr().String())
			s.refuse(c, refusal)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(ctx, c, host)
		}()
	}
	// Shut down: close everything and wait.
	s.mu.Lock()
	for c := range s.open {
		c.Close()
	}
	s.open = nil
	s.mu.Unlock()
	s.wg.Wait()
	close(stopFlush)
	<-flushed
	s.quiet.Flush(true)
	s.cfg.Logger.Info("agent stopped")
	if ctx.Err() != nil {
		return nil
	}
	return err
}

var errShutdown = &wire.RemoteError{Code: wire.CodeBusy, Message: "shutting down"}

// track admits c from host and registers it for shutdown, or says why not.
func (s *Server) track(c net.Conn, host netip.Addr) *wire.RemoteError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		return errShutdown
	}
	st, refusal := s.admit.take(host)
	if st != nil {
		s.open[c] = st
	}
	return refusal
}

// refuse tells a connection over a limit why, without reading what it
// sent, and closes it. Telling costs a goroutine for up to refuseLinger
// (the error is sent, then what the client sent is read and dropped, so
// that closing does not reset the connection before the client has read
// why); past maxRefusing at once, the rest are closed without a word.
func (s *Server) refuse(c net.Conn, e *wire.RemoteError) {
	select {
	case s.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(refuseLinger))
		if wire.WriteFrame(c, wire.TError, e) != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, refuseDrain))
	}()
}

const (
	maxRefusing  = 16
	refuseLinger = time.Second
	refuseDrain  = 4 << 10
)

// authenticated moves c out of the bounds on connections that have proved
// nothing; s.mu is held.
func (s *Server) authenticatedLocked(c net.Conn) {
	if st := s.open[c]; st != nil {
		s.admit.authenticated(st)
	}
}

// release closes c and frees its connection slot. Safe to call once per conn.
func (s *Server) release(c net.Conn) {
	c.Close()
	s.mu.Lock()
	if st := s.open[c]; st != nil {
		delete(s.open, c)
		s.admit.put(st)
	}
	s.mu.Unlock()
}

func (s *Server) handle(ctx context.Context, c net.Conn, host netip.Addr) {
	remote := c.RemoteAddr().String()
	log := s.cfg.Logger.With("remote", remote)
	// Until a client proves itself, what it makes the agent log is rate-limited.
	stranger := func(msg string, args ...any) {
		s.quiet.Log(slog.LevelWarn, msg, host, append([]any{"remote", remote}, args...)...)
	}
	owned := true // false once a data connection is handed to its test
	defer func() {
		if owned {
			s.release(c)
		}
	}()
	c.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := wire.ReadMagic(c); err != nil {
		s.quiet.Log(slog.LevelDebug, "dropped connection: no narrows preface", host, "remote", remote, "err", err)
		return
	}
	var h wire.Hello
	if err := wire.Expect(c, wire.THello, &h); err != nil {
		stranger("dropped connection: bad hello", "err", err)
		return
	}
	ver := wire.Overlap(h.MinVersion, h.MaxVersion, wire.MinVersion, wire.Version)
	if ver == 0 {
		stranger("refused client: protocol version mismatch", "client_min", h.MinVersion, "client_max", h.MaxVersion)
		sendError(c, &wire.RemoteError{Code: wire.CodeVersion,
			Message:    fmt.Sprintf("protocol version mismatch: the agent speaks %s, the client %s; run the same narrows release on both ends", versions(wire.MinVersion, wire.Version), versions(h.MinVersion, h.MaxVersion)),
			MinVersion: wire.MinVersion, MaxVersion: wire.Version})
		return
	}
	switch h.Role {
	case wire.RoleData:
		if s.attach(c, h.Token) {
			owned = false
		} else {
			stranger("dropped data connection: unknown or used token")
			sendError(c, &wire.RemoteError{Code: wire.CodeBadRequest, Message: "data connection for no pending test"})
		}
	case wire.RoleControl:
		s.control(ctx, c, h, log, stranger)
	default:
		sendError(c, &wire.RemoteError{Code: wire.CodeBadRequest, Message: fmt.Sprintf("unknown role %q", h.Role)})
	}
}

func versions(lo, hi int) string {
	if lo == hi {
		return fmt.Sprintf("version %d", lo)
	}
	return fmt.Sprintf("versions %d-%d", lo, hi)
}

func sendError(c net.Conn, e *wire.RemoteError) {
	c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	wire.WriteFrame(c, wire.TError, e)
}

// attach hands a data connection to the test waiting for its token. It
// returns false, and the caller keeps (and closes) c, unless the test took
// ownership: the hand-over and the test giving up (pendingSlot.abandoned)
// are decided under one lock, so a connection is never left between them.
func (s *Server) attach(c net.Conn, token []byte) bool {
	s.mu.Lock()
	p, ok := s.pending[string(token)]
	if ok {
		delete(s.pending, string(token)) // single use
	}
	s.mu.Unlock()
	if !ok || len(token) == 0 {
		return false
	}
	if err := wire.WriteFrame(c, wire.TReady, wire.Ready{Slot: p.slot.ID}); err != nil {
		return false
	}
	if attachGap != nil {
		attachGap()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.abandoned {
		return false
	}
	c.SetDeadline(time.Time{})
	s.authenticatedLocked(c) // its token proved it
	p.deliver <- c
	return true
}

// facts are this host's, routed back to the client of c: read per
// session (a few ms of file reads and ioctls), so they follow the host's
// changes, and told only to a client that proved itself.
func (s *Server) facts(c net.Conn) *result.Facts {
	peer := ""
	if a := hostOf(c); a.IsValid() {
		peer = a.String()
	}
	f := sysinfo.ReadFacts(peer)
	f.Narrows = s.cfg.Software
	return f
}

func (s *Server) control(ctx context.Context, c net.Conn, h wire.Hello, log *slog.Logger, stranger func(string, ...any)) {
	session := newID()
	nonce := wire.NewNonce()
	authed := len(s.cfg.Secret) > 0
	// The release is told in the Welcome, to a client that proved itself:
	// before that, only what the handshake needs (the protocol version).
	if err := wire.WriteFrame(c, wire.TChalleng, wire.Challenge{Version: wire.Version, Capabilities: capabilities(), Session: session,
		Nonce: nonce, AuthRequired: authed}); err != nil {
		return
	}
	var a wire.Auth
	if err := wire.Expect(c, wire.TAuth, &a); err != nil {
		stranger("dropped connection during handshake", "err", err)
		return
	}
	var proof []byte
	if authed {
		if len(h.Nonce) != wire.NonceSize || !wire.Verify(s.cfg.Secret, "client", session, h.Nonce, nonce, a.MAC) {
			stranger("authentication failed")
			s.mu.Lock()
			s.admit.failed(hostOf(c), time.Now())
			s.mu.Unlock()
			sendError(c, &wire.RemoteError{Code: wire.CodeAuth, Message: "authentication failed: the client's secret does not match the agent's"})
			return
		}
		proof = wire.Proof(s.cfg.Secret, "agent", session, h.Nonce, nonce)
	}
	s.mu.Lock()
	s.authenticatedLocked(c)
	s.mu.Unlock()
	if err := wire.WriteFrame(c, wire.TWelcome, wire.Welcome{MAC: proof, Limits: wire.Limits{
		MaxTests: s.cfg.MaxTests, MaxDuration: s.cfg.MaxDuration, MaxStreams: s.cfg.MaxStreams, MaxBlock: s.cfg.MaxBlock,
		MaxDataConns: s.cfg.maxDataConns(), MaxTestMemory: s.cfg.MaxTestMemory,
		DiskPaths: s.diskPaths(), MaxDiskSize: s.cfg.MaxDiskSize, AllowTry: s.cfg.AllowTry}, Facts: s.facts(c), Software: s.cfg.Software}); err != nil {
		return
	}
	log.Info("client connected", "session", session, "software", h.Software)
	clocks := 0
	for {
		c.SetDeadline(time.Now().Add(s.cfg.IdleTimeout))
		var spec wire.TestSpec
		f, err := wire.ReadFrame(c)
		if err == nil && f.Type == wire.TClock {
			// A clock probe between tests, answered at once.
			if err = s.answerClock(c, f, &clocks); err == nil {
				continue
			}
		} else if err == nil {
			err = f.Decode(wire.TTest, &spec)
		}
		if err != nil {
			log.Info("client gone", "session", session, "reason", err.Error())
			return
		}
		if err := s.validate(spec); err != nil {
			refusal := &wire.RemoteError{Code: wire.CodeLimit, Message: err.Error()}
			errors.As(err, &refusal)
			log.Info("test refused", "session", session, "kind", spec.Kind, "code", refusal.Code, "why", refusal.Message)
			sendError(c, refusal)
			return
		}
		select {
		case s.tests <- struct{}{}:
		default:
			log.Warn("test refused: agent busy", "max_tests", s.cfg.MaxTests)
			sendError(c, &wire.RemoteError{Code: wire.CodeBusy, RetryAfter: 5 * time.Second,
				Message: fmt.Sprintf("%s already running (its --max-tests); try again shortly", metric.Plural(int64(s.cfg.MaxTests), "test"))})
			return
		}
		need := spec.Buffers()
		if held, ok := s.reserve(need); !ok {
			<-s.tests
			log.Warn("test refused: agent memory busy", "needs", need, "held", held, "max_memory", s.cfg.MaxMemory)
			sendError(c, &wire.RemoteError{Code: wire.CodeBusy, RetryAfter: 5 * time.Second,
				Message: fmt.Sprintf("the tests running hold %s of buffers and this one needs %s, past the agent's %s (its --max-memory); try again shortly",
					metric.FormatBytes(held), metric.FormatBytes(need), metric.FormatBytes(s.cfg.MaxMemory))})
			return
		}
		attrs := []any{"session", session, "kind", spec.Kind, "direction", spec.Direction, "streams", spec.Streams, "duration", spec.Duration.String()}
		if spec.Disk != nil {
			attrs = append(attrs[:4], "path", spec.Disk.Path, "patterns", len(spec.Disk.Patterns), "size", spec.Disk.Size, "duration", spec.Duration.String())
		}
		if c := spec.Commit; c != nil {
			attrs = append(attrs[:4], "ack", c.Ack, "flush", c.Flush, "block", spec.Block, "in_flight", c.InFlight, "path", c.Path, "duration", spec.Duration.String())
		}
		if spec.Steer != nil {
			attrs = append(attrs, "steer_off_core", spec.Steer.OffCore)
		}
		if spec.Offloads {
			attrs = append(attrs, "offloads", "on")
		}
		if spec.Coalesce {
			attrs = append(attrs, "coalesce", "least")
		}
		log.Info("test started", attrs...)
		// The test's slot and memory are given back before its final
		// report is sent (and at the latest when it returns): a client that
		// reads Done and asks again at once must find them free.
		free := sync.OnceFunc(func() {
			s.unreserve(need)
			<-s.tests
		})
		var reason string
		if far, ok := farKinds[spec.Kind]; ok {
			reason, err = s.runFar(ctx, c, spec, far, free)
		} else {
			reason, err = s.runTest(ctx, c, spec, free)
		}
		free()
		if err != nil {
			log.Warn("test ended with an error", "session", session, "err", err)
			return
		}
		log.Info("test finished", "session", session, "kind", spec.Kind, "end", reason)
	}
}

// answerClock answers a clock probe with the agent's clock, and refuses
// the one past wire.MaxClockProbes of the session (*count so far).
func (s *Server) answerClock(c net.Conn, f wire.Frame, count *int) error {
	if *count >= wire.MaxClockProbes {
		sendError(c, &wire.RemoteError{Code: wire.CodeBadRequest, Message: fmt.Sprintf("more than %d clock probes in one session", wire.MaxClockProbes)})
		return errors.New("too many clock probes")
	}
	*count++
	var ck wire.Clock
	if err := f.Decode(wire.TClock, &ck); err != nil {
		return err
	}
	ck.Agent = time.Now().UnixNano()
	return wire.WriteFrame(c, wire.TClock, ck)
}

// tryRefused refuses a test that asks to change this host's settings
// when its operator did not start the agent with --allow-try.
func tryRefused() error {
	return &wire.RemoteError{Code: wire.CodeRefused, Message: "this agent does not let a test change its settings: its operator starts it with --allow-try to allow it"}
}

func (s *Server) validate(t wire.TestSpec) error {
	if t.Hold && t.Kind != wire.KindDisk {
		return fmt.Errorf("a %s test cannot be held for a go: only a disk test", t.Kind)
	}
	if t.Coalesce && t.Kind != wire.KindRR {
		return fmt.Errorf("a %s test cannot change the agent's coalescing: only a round-trip test", t.Kind)
	}
	if t.Offloads && t.Kind != wire.KindStream {
		return fmt.Errorf("a %s test cannot change the agent's offloads: only a stream test", t.Kind)
	}
	switch t.Kind {
	case wire.KindStream:
		switch t.Direction {
		case wire.Forward, wire.Reverse, wire.Bidir:
		default:
			return fmt.Errorf("unknown direction %q", t.Direction)
		}
		if t.Streams < 1 || t.Streams > s.cfg.MaxStreams {
			return fmt.Errorf("streams %d: the agent allows 1 to %d", t.Streams, s.cfg.MaxStreams)
		}
		if t.Block < 1 || t.Block > s.cfg.MaxBlock {
			return fmt.Errorf("block %d bytes: the agent allows 1 to %d", t.Block, s.cfg.MaxBlock)
		}
		if t.Window < 0 || t.Window > 1<<30 {
			return fmt.Errorf("window %d bytes: the agent allows up to 1 GiB", t.Window)
		}
		if st := t.Steer; st != nil {
			switch {
			case !s.cfg.AllowTry:
				return tryRefused()
			case t.Direction != wire.Forward || t.Streams != 1:
				return fmt.Errorf("a steered test is one stream the agent receives (forward), not %d %s", t.Streams, t.Direction)
			case st.OffCore < 0 || st.OffCore >= sysinfo.MaxCPU:
				return fmt.Errorf("steer off core %d: no such core", st.OffCore)
			}
		}
		if t.Offloads {
			switch {
			case !s.cfg.AllowTry:
				return tryRefused()
			case t.Direction == wire.Bidir || t.Streams != 1:
				return fmt.Errorf("a test with the offloads turned on is one stream, forward or reverse, not %d %s", t.Streams, t.Direction)
			case t.Steer != nil:
				return errors.New("a test either steers the receive or turns the offloads on, not both: one change at a time")
			}
		}
	case wire.KindRR:
		if t.Request < 1 || t.Request > s.cfg.MaxBlock || t.Response < 1 || t.Response > s.cfg.MaxBlock {
			return fmt.Errorf("request/response sizes must be 1 to %d bytes", s.cfg.MaxBlock)
		}
		if t.Coalesce && !s.cfg.AllowTry {
			return tryRefused()
		}
	default:
		far, ok := farKinds[t.Kind]
		if !ok {
			return fmt.Errorf("unknown test kind %q", t.Kind)
		}
		if err := far.check(s, t); err != nil {
			return err
		}
	}
	if n := t.Buffers(); n > s.cfg.MaxTestMemory {
		return fmt.Errorf("%s: needs %s of buffers on the agent; it allows %s per test (its --max-test-memory): %s",
			t.Kind, metric.FormatBytes(n), metric.FormatBytes(s.cfg.MaxTestMemory), smaller(t))
	}
	if n, most := t.DataConns(), s.cfg.maxDataConns(); n > most {
		return fmt.Errorf("%s: %d data connections; the agent allows %d per test (%s)", t.Kind, n, most, dataConnsWhy(most, s.cfg.MaxConns))
	}
	if t.Duration <= 0 || t.Duration > s.cfg.MaxDuration {
		return fmt.Errorf("duration %s: the agent allows up to %s (its --max-duration)", t.Duration, s.cfg.MaxDuration)
	}
	if t.Interval < 10*time.Millisecond {
		return fmt.Errorf("interval %s: must be at least 10ms", t.Interval)
	}
	return nil
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// dataConnsWhy says which bound sets the most data connections a test may open.
func dataConnsWhy(most, maxConns int) string {
	if most == maxConns-1 {
		return fmt.Sprintf("its --max-conns %d, less the control connection", maxConns)
	}
	return "what one report frame can carry"
}

// smaller says what makes a test hold less memory.
func smaller(t wire.TestSpec) string {
	switch t.Kind {
	case wire.KindRR:
		return "use smaller --request and --response sizes"
	case wire.KindDisk:
		return "use a smaller --block, --qd or --threads"
	case wire.KindCommit:
		return "use a smaller --in-flight or --block"
	}
	return "use fewer streams or a smaller --block"
}

// reserve takes need bytes of the agent's buffer memory for a test, or
// says how much the running tests hold.
func (s *Server) reserve(need int64) (held int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.memory+need > s.cfg.MaxMemory {
		return s.memory, false
	}
	s.memory += need
	return s.memory, true
}

// unreserve gives back what a finished test held. The test's buffers are
// garbage now; when they were large, they are returned to the system at
// once, so the agent's resident size falls back after a big test instead
// of staying at its peak until the runtime gets round to it.
func (s *Server) unreserve(need int64) {
	s.mu.Lock()
	s.memory -= need
	s.mu.Unlock()
	if need >= releaseAfter {
		debug.FreeOSMemory()
	}
}

// releaseAfter is the buffer size from which a test's end returns memory
// to the system: below it, the garbage collector's own pace is enough.
const releaseAfter = 16 << 20
