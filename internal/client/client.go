package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/untrusted"
	"github.com/narrows/narrows/internal/wire"
)

// Options for Dial.
type Options struct {
	Addr   string // host:port
	Secret []byte // the shared secret; the agent must prove it holds it too
	// Insecure accepts an agent that runs without authentication (and so
	// proves nothing). Only the person running the client can allow that:
	// an agent's word that no secret is needed is never enough.
	Insecure bool
	Timeout  time.Duration
	Software string
	// MinVersion and MaxVersion override the protocol range sent (tests only).
	MinVersion, MaxVersion int
}

// Session is an authenticated control connection.
type Session struct {
	opts     Options
	conn     net.Conn
	Software string      // the agent's version string
	Limits   wire.Limits // the agent's limits
	// Authenticated is true when the agent proved it holds the secret;
	// false only with Options.Insecure against an agent without one.
	Authenticated bool
	ConnectTime   time.Duration // TCP connect of the control connection
	// Capabilities are what the agent announced it does beyond the
	// protocol version, e.g. the far-side test kinds it runs.
	Capabilities []string
	// Facts are the agent's host, as it told them in its Welcome (the
	// interface is the one routing back to this client); nil from an
	// agent before them.
	Facts *result.Facts

	broken error // set when a test did not end as it should: the session is closed

	// proven: the agent proved it holds the secret. Until then what it
	// says is anyone's word, and shown as such (unverified).
	proven bool
}

// PeerIP is the agent's address as connected: what this host's facts
// route to.
func (s *Session) PeerIP() string {
	if a, ok := s.conn.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

// SameHost says the agent answered on this machine (sysinfo.SameHost of
// the control connection).
// LocalAddr is this end's address of the control connection (its data
// connections leave from the same).
func (s *Session) LocalAddr() net.Addr { return s.conn.LocalAddr() }

func (s *Session) SameHost() bool { return sysinfo.SameHost(s.conn.LocalAddr(), s.conn.RemoteAddr()) }

// Runs says whether the agent runs far-side tests of this kind: an agent
// from before that kind announces nothing of it.
func (s *Session) Runs(kind string) bool {
	return wire.Challenge{Capabilities: s.Capabilities}.Has(wire.KindCapability(kind))
}

// Together says the agent answers clock probes and holds a prepared test
// for a Go (wire.CapTogether): a fleet can start it with the others.
func (s *Session) Together() bool {
	return wire.Challenge{Capabilities: s.Capabilities}.Has(wire.CapTogether)
}

// ClockOffset is the agent's wall clock less this host's, from n probes
// between tests (at most wire.MaxClockProbes a session): the probe of
// the shortest round trip, whose offset is within half of it, as NTP
// reads one exchange; rtt is that round trip.
func (s *Session) ClockOffset(n int) (offset, rtt time.Duration, err error) {
	if !s.Together() {
		return 0, 0, fmt.Errorf("the agent at %s does not answer clock probes: it is older than fleet tests", s.opts.Addr)
	}
	best := time.Duration(-1)
	for range min(max(n, 1), wire.MaxClockProbes) {
		s.conn.SetDeadline(time.Now().Add(s.opts.Timeout))
		t1 := time.Now()
		if err := wire.WriteFrame(s.conn, wire.TClock, wire.Clock{Client: t1.UnixNano()}); err != nil {
			return 0, 0, s.lost(err)
		}
		var c wire.Clock
		f, err := wire.ReadFrame(s.conn)
		if err == nil {
			err = f.Decode(wire.TClock, &c)
		}
		if err != nil {
			return 0, 0, s.remote(err)
		}
		r := time.Since(t1) // monotonic
		if c.Client != t1.UnixNano() || c.Agent <= 0 {
			return 0, 0, s.fail(fmt.Errorf("%w: the agent at %s answered a clock probe with another's", ErrMisbehaved, s.opts.Addr))
		}
		if best < 0 || r < best {
			best = r
			offset = time.Duration(c.Agent - t1.Add(r/2).UnixNano())
		}
	}
	s.conn.SetDeadline(time.Time{})
	return offset, best, nil
}

// Errors a person can act on. The cli maps them to exit code 2.
var (
	ErrAuth    = errors.New("authentication failed")
	ErrVersion = errors.New("protocol version mismatch")
	ErrBusy    = errors.New("agent busy")
	ErrNoAgent = errors.New("no agent reachable")
)

// Refusal is an agent's refusal of a test as asked: over one of its
// operator's limits (wire.CodeLimit), or a place it cannot use
// (wire.CodeRefused). The person changes what they asked for.
type Refusal struct {
	Addr, Message string
}

func (r *Refusal) Error() string { return fmt.Sprintf("agent at %s refused: %s", r.Addr, r.Message) }

// ExitCode is errext.ExitUsage: the person changes what they asked for.
func (r *Refusal) ExitCode() int { return errext.ExitUsage }

// Dial connects, negotiates and authenticates.
func Dial(ctx context.Context, o Options) (*Session, error) {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxVersion == 0 {
		o.MinVersion, o.MaxVersion = wire.MinVersion, wire.Version
	}
	c, took, err := dial(ctx, o)
	if err != nil {
		return nil, err
	}
	s := &Session{opts: o, conn: c, ConnectTime: took}
	if err := s.handshake(); err != nil {
		c.Close()
		return nil, err
	}
	return s, nil
}

func dial(ctx context.Context, o Options) (net.Conn, time.Duration, error) {
	return dialMSS(ctx, o, 0)
}

// dialMSS dials with the connection's MSS clamped to mss bytes before
// the handshake (0: not clamped), see OpenClamped.
func dialMSS(ctx context.Context, o Options, mss int) (net.Conn, time.Duration, error) {
	d := net.Dialer{Timeout: o.Timeout}
	if mss > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) { serr = clampMSS(fd, mss) }); err != nil {
				return err
			}
			if serr != nil {
				return fmt.Errorf("%w: %v", ErrNoClamp, serr)
			}
			return nil
		}
	}
	t0 := time.Now()
	c, err := d.DialContext(ctx, "tcp", o.Addr)
	took := time.Since(t0)
	if err != nil {
		var dnsErr *net.DNSError
		switch {
		case errors.As(err, &dnsErr):
			return nil, 0, fmt.Errorf("%w: unknown host %q: check the name or use an IP address", ErrNoAgent, dnsErr.Name)
		case isRefused(err):
			return nil, 0, fmt.Errorf("%w at %s: connection refused; start `narrows serve` there or check the port", ErrNoAgent, o.Addr)
		case ctx.Err() != nil:
			return nil, 0, ctx.Err()
		default:
			return nil, 0, fmt.Errorf("%w at %s: %v", ErrNoAgent, o.Addr, unwrapOp(err))
		}
	}
	return c, took, nil
}

func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

func (s *Session) handshake() error {
	c := s.conn
	c.SetDeadline(time.Now().Add(s.opts.Timeout))
	defer c.SetDeadline(time.Time{})
	nonce := wire.NewNonce()
	if err := wire.WriteMagic(c); err != nil {
		return s.notAgent(err)
	}
	if err := wire.WriteFrame(c, wire.THello, wire.Hello{MinVersion: s.opts.MinVersion, MaxVersion: s.opts.MaxVersion,
		Role: wire.RoleControl, Nonce: nonce, Software: s.opts.Software}); err != nil {
		return s.notAgent(err)
	}
	var ch wire.Challenge
	if err := wire.Expect(c, wire.TChalleng, &ch); err != nil {
		var re *wire.RemoteError
		if errors.As(err, &re) {
			return s.remote(err)
		}
		return s.notAgent(err)
	}

	// Whether to authenticate is the client's decision, not the agent's:
	// a stand-in that says "no auth needed" must not be believed.
	var a wire.Auth
	switch {
	case ch.AuthRequired && len(s.opts.Secret) == 0:
		return fmt.Errorf("%w: the agent at %s requires a secret; pass --secret-file FILE or set NARROWS_SECRET", ErrAuth, s.opts.Addr)
	case ch.AuthRequired:
		a.MAC = wire.Proof(s.opts.Secret, "client", ch.Session, nonce, ch.Nonce)
	case len(s.opts.Secret) > 0:
		return fmt.Errorf("%w: the agent at %s does not authenticate (it may not be the agent you started); refusing its figures: run it with the same secret", ErrAuth, s.opts.Addr)
	case !s.opts.Insecure:
		return fmt.Errorf("%w: the agent at %s runs without a secret, so its figures cannot be trusted; give both ends a secret, or pass --insecure to accept unauthenticated figures", ErrAuth, s.opts.Addr)
	}
	if err := wire.WriteFrame(c, wire.TAuth, a); err != nil {
		return s.lost(err)
	}
	var w wire.Welcome
	if err := wire.Expect(c, wire.TWelcome, &w); err != nil {
		return s.remote(err)
	}
	// The agent proves itself too, so a stand-in cannot feed us figures.
	if ch.AuthRequired && !wire.Verify(s.opts.Secret, "agent", ch.Session, nonce, ch.Nonce, w.MAC) {
		return fmt.Errorf("%w: the agent at %s did not prove it holds the secret", ErrAuth, s.opts.Addr)
	}
	untrusted.Clean(w.Facts)
	s.Limits = w.Limits
	// Every string an agent sends is escaped as it arrives (untrusted):
	// it is printed, and kept in the run, which compare and history print
	// again later.
	s.Software = untrusted.Text(w.Software)
	if s.Software == "" {
		s.Software = untrusted.Text(ch.Software) // an older agent told it before the proofs
	}
	s.Authenticated = ch.AuthRequired
	s.proven = ch.AuthRequired
	s.Capabilities = ch.Capabilities
	s.Facts = w.Facts
	return nil
}

// remote turns an agent's error frame into an error a person can act on.
func (s *Session) remote(err error) error {
	var re *wire.RemoteError
	if !errors.As(err, &re) {
		return s.lost(err)
	}
	msg := s.words(re.Message)
	switch re.Code {
	case wire.CodeAuth:
		return fmt.Errorf("%w: the secret does not match the agent's at %s", ErrAuth, s.opts.Addr)
	case wire.CodeAuthLimit:
		return fmt.Errorf("%w: the agent at %s refuses this address for now: %s", ErrAuth, s.opts.Addr, msg)
	case wire.CodeVersion:
		return fmt.Errorf("%w: this client speaks protocol %s, the agent at %s speaks %s; run the same narrows release on both ends",
			ErrVersion, span(s.opts.MinVersion, s.opts.MaxVersion), s.opts.Addr, span(re.MinVersion, re.MaxVersion))
	case wire.CodeBusy:
		return fmt.Errorf("%w at %s: %s (retry in %s)", ErrBusy, s.opts.Addr, msg, retryAfter(re.RetryAfter))
	case wire.CodeLimit, wire.CodeRefused:
		return &Refusal{Addr: s.opts.Addr, Message: msg}
	default:
		return fmt.Errorf("agent at %s refused: %s", s.opts.Addr, msg)
	}
}

// words is what the agent said, as it is shown: escaped (untrusted.Text)
// from an agent that proved it holds the secret; from one that has not
// (yet), anyone who listens at the address could have said it, so it is
// quoted, cut short and marked as such.
func (s *Session) words(msg string) string {
	if s.proven {
		return untrusted.Text(msg)
	}
	return "it says (unverified): " + untrusted.Quote(msg)
}

// retryAfter is an agent's hint of when to try again, bounded: a second
// to an hour, whatever it says.
func retryAfter(d time.Duration) time.Duration {
	return min(max(d, time.Second), time.Hour).Round(time.Second)
}

func span(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// notAgent is a failed first exchange: whatever listens at the address
// did not answer the handshake as an agent does (an agent's refusal is a
// frame, read by remote).
func (s *Session) notAgent(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w at %s: something accepted the connection but did not answer narrows' handshake within %s: it is not a narrows agent (`narrows serve`), or one that is stuck; check the port (the agent's default is %d)",
			ErrNoAgent, s.opts.Addr, s.opts.Timeout, wire.DefaultPort)
	case closed(err):
		return fmt.Errorf("%w at %s: something accepted the connection and closed it without answering narrows' handshake: it is not a narrows agent (`narrows serve`), or one refusing connections; check the port (the agent's default is %d)",
			ErrNoAgent, s.opts.Addr, wire.DefaultPort)
	}
	return fmt.Errorf("%w at %s: what answers there does not speak narrows' protocol: it is not a narrows agent (`narrows serve`); check the port (the agent's default is %d)",
		ErrNoAgent, s.opts.Addr, wire.DefaultPort)
}

func (s *Session) lost(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("agent at %s stopped answering (timed out)", s.opts.Addr)
	}
	if errors.Is(err, wire.ErrFrameTooLarge) {
		return fmt.Errorf("agent at %s sent an oversized frame: %w", s.opts.Addr, err)
	}
	if closed(err) {
		return fmt.Errorf("connection to the agent at %s lost: the agent closed it (it stopped, or was killed)", s.opts.Addr)
	}
	return fmt.Errorf("connection to the agent at %s lost: %v", s.opts.Addr, err)
}

// closed says the far end closed or reset the connection.
func closed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Close ends the session.
func (s *Session) Close() error { return s.conn.Close() }

// Addr is the agent's address as dialled.
func (s *Session) Addr() string { return s.opts.Addr }

// DataConn is one opened data connection.
type DataConn struct {
	Slot        wire.Slot
	Conn        net.Conn
	ConnectTime time.Duration // TCP handshake
}

// Test is an accepted test whose data connections are open.
type Test struct {
	s        *Session
	Spec     wire.TestSpec
	Accepted wire.Accepted
	Conns    []DataConn

	// What the agent may send, and until when (see Bounds), armed by
	// Start; what it has sent so far.
	bounds          Bounds
	deadline        time.Time
	frames, reports int
	bytes           int64

	mu       sync.Mutex
	finished bool      // Done was read: nothing more may be sent
	stopped  bool      // Stop was sent
	stopBy   time.Time // after Stop: the agent has until then to say Done
	readBy   time.Time // the deadline of the read in progress
	unwatch  func() bool
}

// Open asks the agent for a test and opens its data connections. Call
// Start once the caller is ready to move data.
func (s *Session) Open(ctx context.Context, spec wire.TestSpec) (*Test, error) {
	return s.open(ctx, spec, 0)
}

// OpenClamped is Open with every data connection's MSS clamped to mss
// bytes before its handshake (TCP_MAXSEG): the connection then sends no
// segment larger than mss, and the MSS it announces holds the agent's
// segments to it too, so the IP packets are at most mss + 40 bytes each
// way (IPv4; + 60 over IPv6), TCP options included. Where the system
// cannot clamp (Windows), the error wraps ErrNoClamp.
func (s *Session) OpenClamped(ctx context.Context, spec wire.TestSpec, mss int) (*Test, error) {
	return s.open(ctx, spec, mss)
}

// ErrNoClamp: this system cannot clamp a connection's MSS.
var ErrNoClamp = errors.New("cannot clamp the TCP MSS here")

func (s *Session) open(ctx context.Context, spec wire.TestSpec, mss int) (*Test, error) {
	if s.broken != nil {
		return nil, s.broken
	}
	s.conn.SetDeadline(time.Now().Add(s.opts.Timeout))
	if err := wire.WriteFrame(s.conn, wire.TTest, spec); err != nil {
		return nil, s.lost(err)
	}
	var acc wire.Accepted
	if err := wire.Expect(s.conn, wire.TAccepted, &acc); err != nil {
		return nil, s.remote(err)
	}
	untrusted.Clean(&acc) // a disk test's notes, its directory
	t := &Test{s: s, Spec: spec, Accepted: acc}
	for _, sl := range acc.Slots {
		c, took, err := dialMSS(ctx, s.opts, mss)
		if err != nil {
			t.closeConns()
			return nil, err
		}
		t.Conns = append(t.Conns, DataConn{Slot: sl, Conn: c, ConnectTime: took})
		if tc, ok := c.(*net.TCPConn); ok && spec.Window > 0 {
			tc.SetReadBuffer(int(spec.Window))
			tc.SetWriteBuffer(int(spec.Window))
		}
		c.SetDeadline(time.Now().Add(s.opts.Timeout))
		err = wire.WriteMagic(c)
		if err == nil {
			err = wire.WriteFrame(c, wire.THello, wire.Hello{MinVersion: s.opts.MinVersion, MaxVersion: s.opts.MaxVersion,
				Role: wire.RoleData, Token: sl.Token})
		}
		var r wire.Ready
		if err == nil {
			err = wire.Expect(c, wire.TReady, &r)
		}
		if err != nil {
			t.closeConns()
			return nil, s.remote(err)
		}
		c.SetDeadline(time.Time{})
	}
	return t, nil
}

// StopGrace is how long a test the client stopped (Ctrl-C, a probe's own
// end) waits for the agent's Done: enough for an agent to close a disk
// test's file and account for it, short enough that Ctrl-C feels at once.
const StopGrace = 3 * time.Second

// MinPrepareRate is the slowest an agent may lay out a far test's file
// (a disk or commit test's, a cpu test's sample) before the client gives
// up on it: a disk slower than this is broken, and an agent that claims
// to be preparing for longer is not believed.
const MinPrepareRate = 5e6 // bytes per second

// minPrepare is the least time an agent gets to prepare, whatever the size.
const minPrepare = time.Minute

// Bounds are what a test's agent may do after Start: the client's own
// account of a test, worked out from what it asked for, never from what
// the agent says, so that an agent, honest or not, cannot keep the client
// waiting or make it hold more than the test is worth.
type Bounds struct {
	// Prepare is the most the agent may take to get ready (far tests that
	// lay out a file or a sample): the larger of a minute and the file at
	// MinPrepareRate, and no more than the agent's own --max-duration.
	Prepare time.Duration
	// Run is the most the test may take once ready: its duration for each
	// pattern (disk) or codec each way (cpu), each with the session's
	// timeout for the I/O in flight at its end, as the agent bounds them.
	Run time.Duration
	// Slack is how long past Prepare + Run the agent has to say Done.
	Slack time.Duration
	// Hold is how long a held test (wire.TestSpec.Hold) may wait for its
	// Go once prepared: the agent's --max-duration.
	Hold time.Duration
	// Reports is the most interval reports (frames with figures) the
	// client takes: one each interval of Run, and a few more for each
	// pattern's last stretch; Frames is the most frames of any kind,
	// twice one each interval (an agent sends a heartbeat as well while it
	// prepares or runs) and a margin.
	Reports, Frames int
}

// Deadline is the whole test's: Prepare + Hold + Run + Slack.
func (b Bounds) Deadline() time.Duration { return b.Prepare + b.Hold + b.Run + b.Slack }

// BoundsOf works out a test's bounds from its spec, the agent's limits
// (only ever to lower them) and the session's timeout.
func BoundsOf(spec wire.TestSpec, lim wire.Limits, timeout time.Duration) Bounds {
	units, prepBytes := 1, int64(-1)
	switch spec.Kind {
	case wire.KindDisk:
		if spec.Disk != nil {
			units, prepBytes = max(1, len(spec.Disk.Patterns)), spec.Disk.Size
		}
	case wire.KindCPU:
		if spec.CPU != nil {
			units, prepBytes = max(1, 2*len(spec.CPU.Codecs)), spec.CPU.SampleBytes
		}
	case wire.KindCommit:
		prepBytes = 0
		if spec.Commit != nil {
			prepBytes = spec.Commit.Size
		}
	}
	var b Bounds
	if prepBytes >= 0 {
		b.Prepare = max(minPrepare, time.Duration(float64(prepBytes)/MinPrepareRate*float64(time.Second)))
		if lim.MaxDuration > 0 {
			b.Prepare = min(b.Prepare, lim.MaxDuration)
		}
	}
	if spec.Hold {
		b.Hold = cmp.Or(lim.MaxDuration, 10*time.Minute)
	}
	d := max(spec.Duration, 0)
	b.Run = time.Duration(units) * (d + timeout)
	iv := spec.Interval
	if iv <= 0 || iv > d {
		iv = max(d, time.Second)
	}
	b.Slack = 2*iv + timeout + StopGrace
	per := func(x time.Duration) int { return int((x + iv - 1) / iv) }
	b.Reports = per(b.Run) + 2*units + 8
	b.Frames = 2*per(b.Deadline()) + b.Reports + 64
	return b
}

// Bounds are the test's bounds (armed by Start).
func (t *Test) Bounds() Bounds { return t.bounds }

// ErrMisbehaved is an agent that broke a test's bounds: it sent more than
// the test is worth, or did not end it in time. Its session is closed;
// a caller running several tests asks that agent nothing more.
var ErrMisbehaved = errors.New("the agent misbehaved")

// Start tells the agent to begin and arms the test's bounds: from now the
// agent has Bounds().Deadline() to say Done, and when ctx is done it is
// told to stop (once, never after Done) and has StopGrace to say Done.
func (t *Test) Start(ctx context.Context) error {
	t.bounds = BoundsOf(t.Spec, t.s.Limits, t.s.opts.Timeout)
	t.deadline = time.Now().Add(t.bounds.Deadline())
	t.s.conn.SetWriteDeadline(time.Now().Add(t.s.opts.Timeout))
	if err := wire.WriteFrame(t.s.conn, wire.TStart, wire.Start{}); err != nil {
		return t.s.lost(err)
	}
	t.unwatch = context.AfterFunc(ctx, func() { t.Stop(probeInterrupted) })
	return nil
}

// probeInterrupted is probe.Interrupted (which imports this package).
const probeInterrupted = "interrupted"

// Stop asks the agent to end the test now, once, and never after its
// Done (the agent would read it as this session's next request). The
// agent then has StopGrace to say Done: a read in progress or to come
// waits no longer.
func (t *Test) Stop(reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished || t.stopped {
		return
	}
	t.stopped = true
	t.stopBy = time.Now().Add(StopGrace)
	t.s.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	wire.WriteFrame(t.s.conn, wire.TStop, wire.Stop{Reason: reason})
	if t.readBy.IsZero() || t.stopBy.Before(t.readBy) {
		t.readBy = t.stopBy
		t.s.conn.SetReadDeadline(t.stopBy)
	}
}

// Go starts a held test at at, the agent's wall clock in nanoseconds
// since 1970; never after a Stop or the Done.
func (t *Test) Go(at int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished || t.stopped {
		return nil
	}
	t.s.conn.SetWriteDeadline(time.Now().Add(t.s.opts.Timeout))
	if err := wire.WriteFrame(t.s.conn, wire.TGo, wire.Go{At: at}); err != nil {
		return t.s.lost(err)
	}
	return nil
}

// Next reads the agent's next report: *wire.Interval or *wire.Done. It
// waits at most until deadline, and never past the test's bounds: an
// agent that has sent more than the test is worth, or has not ended it
// in time, gets an error wrapping ErrMisbehaved (and a Stop).
func (t *Test) Next(deadline time.Time) (any, error) {
	t.mu.Lock()
	if !t.deadline.IsZero() && t.deadline.Before(deadline) {
		deadline = t.deadline
	}
	if t.stopped && t.stopBy.Before(deadline) {
		deadline = t.stopBy
	}
	t.readBy = deadline
	t.s.conn.SetReadDeadline(deadline)
	t.mu.Unlock()
	f, err := wire.ReadFrame(t.s.conn)
	t.mu.Lock()
	t.readBy = time.Time{}
	stopped := t.stopped
	t.mu.Unlock()
	if err != nil {
		var ne net.Error
		switch {
		case !errors.As(err, &ne) || !ne.Timeout():
		case stopped && !time.Now().Before(t.stopBy):
			return nil, t.s.fail(fmt.Errorf("agent at %s did not end the test within %s of being told to stop", t.s.opts.Addr, StopGrace))
		case !t.deadline.IsZero() && !time.Now().Before(t.deadline):
			return nil, t.misbehaved(fmt.Sprintf("did not end a test of %s within %s (%s to prepare, %s to run, %s to report)",
				t.Spec.Duration, t.bounds.Deadline().Round(time.Second), t.bounds.Prepare, t.bounds.Run, t.bounds.Slack))
		}
		// A test that ended without its Done leaves the session in no
		// known state: frames may still come.
		return nil, t.s.fail(t.s.lost(err))
	}
	t.frames++
	t.bytes += int64(len(f.Body)) + 5
	switch f.Type {
	case wire.TInterval:
		var iv wire.Interval
		if err := f.Decode(wire.TInterval, &iv); err != nil {
			return nil, t.s.fail(fmt.Errorf("agent at %s sent a report that does not decode: %w", t.s.opts.Addr, err))
		}
		untrusted.Clean(&iv)
		if iv.Record != nil || len(iv.Slots) > 0 {
			t.reports++
		}
		if t.bounds.Frames > 0 && (t.frames > t.bounds.Frames || t.reports > t.bounds.Reports) {
			return nil, t.misbehaved(fmt.Sprintf("sent %d frames (%d reports, %s) for a test of %s, where at most %d (%d reports) were due",
				t.frames, t.reports, metric.FormatBytes(t.bytes), t.Spec.Duration, t.bounds.Frames, t.bounds.Reports))
		}
		return &iv, nil
	case wire.TDone:
		var d wire.Done
		if err := f.Decode(wire.TDone, &d); err != nil {
			return nil, t.s.fail(fmt.Errorf("agent at %s sent a report that does not decode: %w", t.s.opts.Addr, err))
		}
		untrusted.Clean(&d) // its reason, a far-side test's result
		t.mu.Lock()
		t.finished = true
		t.mu.Unlock()
		return &d, nil
	default:
		var x struct{}
		return nil, t.s.remote(f.Decode(wire.TDone, &x))
	}
}

// misbehaved stops the test, ends the session (whatever the agent sends
// next means nothing) and says what the agent did.
func (t *Test) misbehaved(what string) error {
	t.Stop("the client's bounds on the test were broken")
	return t.s.fail(fmt.Errorf("%w: the agent at %s %s: stopped, and nothing more is asked of it", ErrMisbehaved, t.s.opts.Addr, what))
}

// fail ends a session whose state is no longer known (a test that did
// not end as it should): later requests get err at once.
func (s *Session) fail(err error) error {
	s.broken = err
	s.conn.Close()
	return err
}

// Close closes the data connections (the session stays open) and stops
// watching the start's context.
func (t *Test) Close() {
	if t.unwatch != nil {
		t.unwatch()
	}
	t.closeConns()
}

func (t *Test) closeConns() {
	for _, dc := range t.Conns {
		dc.Conn.Close()
	}
}

// RunFar runs a far-side test: one the agent runs on its own resources
// (its storage, its CPU), with no data connections. accepted sees what
// the agent said before the test starts; an error from it ends the test
// there. emit gets each interval record the agent's probe emitted, as it
// arrives. When ctx is done the agent is told to stop, and the test's
// account, partial, still comes back. Every wait is bounded: the agent
// sends a frame every interval while it prepares, and its probe reports
// every interval while it measures, the last stretch of each pattern
// once its I/O has ended (so up to two intervals apart, and the timeout
// for that I/O).
func (s *Session) RunFar(ctx context.Context, spec wire.TestSpec, accepted func(*wire.Accepted) error, emit func(result.Interval)) (*wire.Done, error) {
	return s.RunHeld(ctx, spec, accepted, emit, nil)
}

// RunHeld is RunFar for a test that may be held (spec.Hold): once the
// agent has prepared, ready is called (once) and returns the instant to
// start at in the agent's own clock (unix ns), which the agent is sent.
// ready blocks the test's reading while it waits (for the other hosts of
// a fleet): the agent's heartbeats meanwhile wait in the connection.
func (s *Session) RunHeld(ctx context.Context, spec wire.TestSpec, accepted func(*wire.Accepted) error, emit func(result.Interval),
	ready func() (int64, error)) (*wire.Done, error) {
	t, err := s.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if err := accepted(&t.Accepted); err != nil {
		return nil, err
	}
	if err := t.Start(ctx); err != nil {
		return nil, err
	}
	for {
		x, err := t.Next(time.Now().Add(2*spec.Interval + s.opts.Timeout))
		if err != nil {
			return nil, err
		}
		switch v := x.(type) {
		case *wire.Interval:
			if v.Record != nil {
				emit(*v.Record)
			}
			if v.Stage == wire.StageReady && spec.Hold && ready != nil {
				at, err := ready()
				ready = nil
				if err != nil {
					t.Stop(err.Error())
					continue // its Done comes
				}
				if err := t.Go(at); err != nil {
					return nil, err
				}
			}
		case *wire.Done:
			switch {
			case v.Code == wire.CodeRefused || v.Code == wire.CodeLimit:
				return v, &Refusal{Addr: s.opts.Addr, Message: v.Reason}
			case v.Reason != "" && ctx.Err() == nil:
				return v, fmt.Errorf("the agent at %s ended the test early: %s", s.opts.Addr, v.Reason)
			}
			return v, nil
		}
	}
}
