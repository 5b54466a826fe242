package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

func dial(t *testing.T, addr, secret string) (*client.Session, error) {
	t.Helper()
	return client.Dial(context.Background(), client.Options{Addr: addr, Secret: []byte(secret), Timeout: 5 * time.Second})
}

func TestConfigValidate(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:7447")
	any := netip.MustParseAddrPort("[::]:7447")
	cases := []struct {
		name string
		cfg  agent.Config
		at   netip.AddrPort
		want string
	}{
		{"secret on any address", agent.Config{Secret: []byte("0123456789abcdef")}, any, ""},
		{"insecure on loopback", agent.Config{Insecure: true}, lo, ""},
		{"insecure on all addresses", agent.Config{Insecure: true}, any, "loopback"},
		{"neither", agent.Config{}, lo, "no secret"},
		{"both", agent.Config{Secret: []byte("0123456789abcdef"), Insecure: true}, lo, "choose one"},
		{"short secret", agent.Config{Secret: []byte("short")}, lo, "too short"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate(c.at)
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate = %v, want %q", err, c.want)
			}
		})
	}
}

// inProcess runs an agent in this process on 127.0.0.1:0.
func inProcess(t *testing.T, cfg agent.Config) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.New(cfg).Serve(ctx, ln) }()
	return ln.Addr().String(), func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
}

// TestNoGoroutineLeaks abuses an in-process agent (garbage, silence,
// vanishing mid-test, a full run) and checks that once it shuts down every
// goroutine it started is gone.
func TestNoGoroutineLeaks(t *testing.T) {
	dir := t.TempDir()
	roots, err := agent.ResolveDiskPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), HandshakeTimeout: 500 * time.Millisecond,
		IdleTimeout: 500 * time.Millisecond, DataTimeout: 2 * time.Second, DiskRoots: roots})

	// Garbage, and a connection that never speaks.
	g, _ := net.Dial("tcp", addr)
	g.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	silent, _ := net.Dial("tcp", addr)
	defer g.Close()
	defer silent.Close()

	// A full rr test.
	s, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rr.Run(context.Background(), s, rr.Config{Request: 64, Response: 64, Duration: 300 * time.Millisecond,
		Interval: 100 * time.Millisecond, Queries: 10}, func(result.Interval) {})
	if err != nil || res.RoundTrips == 0 {
		t.Fatalf("rr: %v, %d round trips", err, res.RoundTrips)
	}
	s.Close()

	// A client that opens a stream test and vanishes mid-way.
	s2, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	go func() { <-ctx.Done(); s2.Close() }()
	stream.Run(ctx, s2, stream.Config{Direction: wire.Bidir, Streams: 1, Duration: 5 * time.Second, Interval: 100 * time.Millisecond, Block: 64 << 10}, func(result.Interval) {})
	cancel()

	// A full disk test, and one whose client vanishes mid-way.
	s3, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.RunFar(context.Background(), diskSpec(dir), func(*wire.Accepted) error { return nil }, func(result.Interval) {}); err != nil {
		t.Fatalf("disk: %v", err)
	}
	long := diskSpec(dir)
	long.Duration = 5 * time.Second
	if _, err := s3.RunFar(context.Background(), long, func(*wire.Accepted) error { return nil }, func(result.Interval) { s3.Close() }); err == nil {
		t.Fatal("a disk test whose client closed its connection ended well")
	}

	stop()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after shutdown:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

func TestWrongSecretAndVersionMismatch(t *testing.T) {
	a := itest.StartAgent(t, nil)
	if _, err := dial(t, a.Addr, "not-the-right-secret-at-all"); !errors.Is(err, client.ErrAuth) || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := dial(t, a.Addr, ""); !errors.Is(err, client.ErrAuth) || !strings.Contains(err.Error(), "NARROWS_SECRET") {
		t.Fatalf("no secret: %v", err)
	}
	_, err := client.Dial(context.Background(), client.Options{Addr: a.Addr, Secret: []byte(itest.Secret), Timeout: 5 * time.Second, MinVersion: 7, MaxVersion: 9})
	if !errors.Is(err, client.ErrVersion) || !strings.Contains(err.Error(), "7-9") || !strings.Contains(err.Error(), "speaks 1") {
		t.Fatalf("version mismatch: %v", err)
	}
	if !strings.Contains(a.Log(), "authentication failed") || strings.Contains(a.Log(), itest.Secret) {
		t.Fatalf("agent log must note the failure and never the secret:\n%s", a.Log())
	}
	// Through the command line: one line, exit code 2.
	r := itest.Run(t, 20*time.Second, []string{"NARROWS_SECRET=wrong-secret-wrong-secret"}, "net", "rr", "--to", a.Addr, "--duration", "1s")
	if r.Code != 2 || !strings.Contains(r.Stderr, "authentication failed") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Fatalf("cli wrong secret: code %d stderr %q", r.Code, r.Stderr)
	}
}

// TestAgentSurvivesAbuse: an oversized frame, garbage, a silent connection
// and a client killed mid-test each leave the agent serving the next one.
func TestAgentSurvivesAbuse(t *testing.T) {
	a := itest.StartAgent(t, []string{"--handshake-timeout", "1s", "--idle-timeout", "1s", "--data-timeout", "2s"})
	t.Run("oversized frame", func(t *testing.T) {
		c, err := net.Dial("tcp", a.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte(wire.Magic))
		c.Write([]byte{0x7f, 0xff, 0xff, 0xff, byte(wire.THello)})
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("agent answered an oversized frame instead of closing")
		} else if errors.Is(err, errTimeout(err)) {
			t.Fatal("agent kept the connection open")
		}
	})
	t.Run("silent connection freed by the handshake deadline", func(t *testing.T) {
		c, err := net.Dial("tcp", a.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		t0 := time.Now()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		if err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("silent connection: %v after %s, want the agent to close it", err, time.Since(t0))
		}
		if el := time.Since(t0); el < 800*time.Millisecond || el > 3*time.Second {
			t.Fatalf("closed after %s, want about the 1s handshake deadline", el)
		}
	})
	t.Run("idle authenticated connection freed", func(t *testing.T) {
		s, err := dial(t, a.Addr, itest.Secret)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		time.Sleep(2 * time.Second) // past the 1s idle deadline
		if _, err := s.Open(context.Background(), wire.TestSpec{Kind: wire.KindRR, Request: 1, Response: 1,
			Duration: time.Second, Interval: time.Second}); err == nil {
			t.Fatal("the agent kept an idle control connection past --idle-timeout")
		}
	})
	t.Run("test never started is freed", func(t *testing.T) {
		s, err := dial(t, a.Addr, itest.Secret)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		tst, err := s.Open(context.Background(), wire.TestSpec{Kind: wire.KindRR, Request: 1, Response: 1, Duration: time.Second, Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer tst.Close()
		// Never send Start: the agent must drop the test at its handshake deadline.
		t0 := time.Now()
		_, err = tst.Next(time.Now().Add(5 * time.Second))
		if err == nil || strings.Contains(err.Error(), "timed out") {
			t.Fatalf("agent held an unstarted test: %v", err)
		}
		if el := time.Since(t0); el > 3*time.Second {
			t.Fatalf("unstarted test freed after %s, want about 1s", el)
		}
	})
	t.Run("client killed mid-test", func(t *testing.T) {
		cmd := exec.Command(itest.Binary(t), "net", "stream", "--to", a.Addr, "--duration", "30s", "--bidir")
		cmd.Env = append(cmd.Environ(), "NARROWS_SECRET="+itest.Secret)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		r := itest.Run(t, 20*time.Second, nil, "net", "rr", "--to", a.Addr, "--duration", "1s", "--json")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"round_trips_per_second"`) {
			t.Fatalf("next client after a killed one: code %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(a.Log(), "client gone") {
			t.Fatalf("agent did not notice the killed client:\n%s", a.Log())
		}
	})
}

func errTimeout(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return errors.New("not a timeout")
}

// TestConcurrentClientsAndBusy: four clients at once all run (iperf3
// serves one); a fifth test beyond --max-tests is told "busy".
func TestConcurrentClientsAndBusy(t *testing.T) {
	a := itest.StartAgent(t, []string{"--max-tests", "4"})
	var wg sync.WaitGroup
	results := make([]itest.Result, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = itest.Run(t, 30*time.Second, nil, "net", "rr", "--to", a.Addr, "--duration", "3s", "--json")
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	s, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Open(context.Background(), wire.TestSpec{Kind: wire.KindRR, Request: 1, Response: 1, Duration: time.Second, Interval: time.Second})
	s.Close()
	if !errors.Is(err, client.ErrBusy) {
		t.Errorf("fifth test: %v, want busy", err)
	}
	wg.Wait()
	for i, r := range results {
		if r.Code != 0 || !strings.Contains(r.Stdout, `"round_trips_per_second"`) {
			t.Errorf("client %d: code %d\n%s", i, r.Code, r.Stderr)
		}
	}
}

// openRaw authenticates a control connection by hand and asks for an rr
// test, returning the connection and the data slot's token: a client that
// can open its data connection whenever it likes.
func openRaw(addr, secret string) (net.Conn, []byte, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	nonce := wire.NewNonce()
	wire.WriteMagic(c)
	wire.WriteFrame(c, wire.THello, wire.Hello{MinVersion: wire.MinVersion, MaxVersion: wire.Version, Role: wire.RoleControl, Nonce: nonce})
	var ch wire.Challenge
	if err := wire.Expect(c, wire.TChalleng, &ch); err != nil {
		c.Close()
		return nil, nil, err
	}
	wire.WriteFrame(c, wire.TAuth, wire.Auth{MAC: wire.Proof([]byte(secret), "client", ch.Session, nonce, ch.Nonce)})
	var w wire.Welcome
	if err := wire.Expect(c, wire.TWelcome, &w); err != nil {
		c.Close()
		return nil, nil, err
	}
	wire.WriteFrame(c, wire.TTest, wire.TestSpec{Kind: wire.KindRR, Request: 1, Response: 1, Duration: time.Second, Interval: time.Second})
	var acc wire.Accepted
	if err := wire.Expect(c, wire.TAccepted, &acc); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, acc.Slots[0].Token, nil
}

// attachData opens a data connection for token and waits for the agent's
// answer (Ready or an error), then closes it.
func attachData(addr string, token []byte) {
	d, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer d.Close()
	d.SetDeadline(time.Now().Add(5 * time.Second))
	wire.WriteMagic(d)
	wire.WriteFrame(d, wire.THello, wire.Hello{MinVersion: wire.MinVersion, MaxVersion: wire.Version, Role: wire.RoleData, Token: token})
	wire.ReadFrame(d)
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestDataConnectionsNeverLeak races data connections against the test's
// deadline for them: the agent takes the token, the test gives up, the
// agent hands the connection over. Every accepted connection must end up
// owned by a test or closed: once the clients are gone the agent holds no
// more descriptors or goroutines than before, and it still serves.
func TestDataConnectionsNeverLeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	const handshake = 100 * time.Millisecond
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), MaxConns: 8, MaxTests: 8, HandshakeTimeout: handshake})
	defer stop()
	time.Sleep(50 * time.Millisecond) // the agent is listening and its goroutine parked
	fds, goroutines := openFDs(t), runtime.NumGoroutine()

	// Widened: every data connection is still being handed over when its
	// test gives up. More attempts than --max-conns: each leak would hold
	// one of the agent's connection slots for good.
	restore := agent.SetAttachGap(func() { time.Sleep(2 * handshake) })
	for range 10 {
		ctl, tok, err := openRaw(addr, itest.Secret)
		if err != nil {
			continue // a leaky agent stops serving; the counts below say so
		}
		attachData(addr, tok)
		ctl.Close()
		time.Sleep(3 * handshake)
	}
	restore()

	// Natural: data connections arrive around the deadline, as they would.
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				ctl, tok, err := openRaw(addr, itest.Secret)
				if err != nil {
					continue
				}
				time.Sleep(handshake - 2*time.Millisecond + time.Duration(w*7+i%5)*time.Millisecond/2)
				attachData(addr, tok)
				ctl.Close()
			}
		}()
	}
	wg.Wait()

	deadline := time.Now().Add(3 * time.Second)
	for (openFDs(t) > fds || runtime.NumGoroutine() > goroutines) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := openFDs(t); n > fds {
		t.Errorf("%d descriptors open before, %d after every client left: the agent holds %d connections no one owns", fds, n, n-fds)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines before, %d after every client left", goroutines, n)
	}
	s, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatalf("the agent stopped serving: %v", err)
	}
	s.Close()
}

// TestFloodFromOneHost: silent connections from one address, more than
// --max-conns (64), each reopened as soon as the agent frees or refuses it,
// must neither lock out clients from elsewhere nor flood the log.
func TestFloodFromOneHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("floods from 127.0.0.2, which only Linux answers on without setup")
	}
	var logs itest.Buffer
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), HandshakeTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	var flood sync.WaitGroup
	var refused atomic.Int64
	for range 96 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				t0 := time.Now()
				c.SetReadDeadline(time.Now().Add(3 * time.Second))
				c.Read(make([]byte, 1)) // say nothing; wait to be closed
				c.Close()
				if time.Since(t0) < 100*time.Millisecond {
					refused.Add(1)
					time.Sleep(50 * time.Millisecond) // refused at once: no busy loop
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the flood holds what it can
	ok := 0
	const tries = 12
	for range tries {
		s, err := dial(t, addr, itest.Secret)
		if err == nil {
			ok++
			s.Close()
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	flood.Wait()
	stop()
	lines := strings.Count(logs.String(), "\n")
	t.Logf("%d of %d handshakes succeeded; %d flood connections refused; %d log lines", ok, tries, refused.Load(), lines)
	if ok != tries {
		t.Errorf("%d of %d real handshakes succeeded during a flood from another address", ok, tries)
	}
	// Two lines per real client, the agent's start and stop, and at most a
	// burst and a summary for each kind of refusal.
	if max := 2*tries + 2 + 3*(5+1); lines > max {
		t.Errorf("%d log lines, want at most %d:\n%.3000s", lines, max, logs.String())
	}
	if !strings.Contains(logs.String(), "not logged each time") {
		t.Errorf("the log does not summarise what it left out:\n%.3000s", logs.String())
	}
}

// TestDataConnsLimitAnnounced: the agent announces how many data
// connections one test may open and refuses more in words, whatever the
// client checked.
func TestDataConnsLimitAnnounced(t *testing.T) {
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), MaxConns: 64})
	defer stop()
	s, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Limits.MaxDataConns != 63 {
		t.Fatalf("announced %d data connections per test, want 63 (--max-conns 64 less the control connection)", s.Limits.MaxDataConns)
	}
	_, err = s.Open(context.Background(), wire.TestSpec{Kind: wire.KindStream, Direction: wire.Forward, Streams: 64,
		Duration: time.Second, Interval: time.Second, Block: 1024})
	if err == nil || !strings.Contains(err.Error(), "64 data connections; the agent allows 63 per test") {
		t.Fatalf("64 streams against --max-conns 64: %v", err)
	}
}

// TestFailedProofsLimited: an address whose proofs failed ten times in a
// minute is refused for a minute after the last, even with the right
// secret, so a secret cannot be guessed at the agent's handshake rate;
// another address is still served.
func TestFailedProofsLimited(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses 127.0.0.2, which only Linux answers on without setup")
	}
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), HandshakeTimeout: 2 * time.Second})
	defer stop()
	for i := range 10 {
		if _, err := dial(t, addr, "wrong-secret-wrong-secret"); !errors.Is(err, client.ErrAuth) {
			t.Fatalf("wrong secret, try %d: %v, want an authentication error", i+1, err)
		}
	}
	s, err := dial(t, addr, itest.Secret)
	if err == nil {
		s.Close()
		t.Fatal("after ten failed proofs the right secret from the same address was still let in")
	}
	// Told why, not just cut off: in the agent's words, which the client
	// shows as unverified (the refusal comes before any proof).
	if !errors.Is(err, client.ErrAuth) || !strings.Contains(err.Error(), `refuses this address for now: it says (unverified): "10 failed authentications from this address within 1m0s`) {
		t.Fatalf("refused after ten failed proofs: %v, want the reason", err)
	}
	// Another address: accepted and held open for its handshake, not
	// closed at once as a refused one is.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection from another address: %v, want it held open for its handshake", err)
	}
}

// TestClosedControlFreesTestAtOnce: a client that is given a test and goes
// away before opening its data connections frees the agent's test slot at
// once, not when the agent would have stopped waiting for them (10 s).
func TestClosedControlFreesTestAtOnce(t *testing.T) {
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), MaxTests: 1})
	defer stop()
	ctl, _, err := openRaw(addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	ctl.Close()
	t0 := time.Now()
	for {
		s, err := dial(t, addr, itest.Secret)
		if err != nil {
			t.Fatal(err)
		}
		_, err = rr.Run(context.Background(), s, rr.Config{Request: 1, Response: 1, Duration: 50 * time.Millisecond,
			Interval: 50 * time.Millisecond}, func(result.Interval) {})
		s.Close()
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrBusy) {
			t.Fatal(err)
		}
		if time.Since(t0) > 2*time.Second {
			t.Fatalf("the only test slot was still taken %s after its client closed the control connection: %v", time.Since(t0).Round(time.Millisecond), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("test slot free %s after the client left", time.Since(t0).Round(time.Millisecond))
}

// procStatus reads one "kB" figure of /proc/PID/status, in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestMemoryBounded: the test that took the agent to 538 MB resident and
// left it there (31 bidirectional streams of 16 MiB blocks: each source
// had its own block, each sink a 4 MiB read buffer) now holds one shared
// block and the read buffers, 140 MiB, which the agent's --max-test-memory
// allows; its resident size peaks within that of where it idled, three
// runs in a row, and falls back once each test ends.
func TestMemoryBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/status")
	}
	a := itest.StartAgent(t, nil)
	pid := a.Cmd.Process.Pid
	time.Sleep(200 * time.Millisecond)
	idle := procStatus(t, pid, "VmRSS")
	spec := wire.TestSpec{Kind: wire.KindStream, Direction: wire.Bidir, Streams: 31, Block: 16 << 20}
	buffers := spec.Buffers()
	if buffers != 140<<20 {
		t.Fatalf("31 bidirectional streams of 16 MiB blocks count %d bytes of buffers, want 140 MiB", buffers)
	}
	for i := range 3 {
		r := itest.Run(t, time.Minute, nil, "net", "stream", "--to", a.Addr, "--streams", "31", "--bidir", "--block", "16M", "--duration", "1s", "--json")
		if r.Code != 0 {
			t.Fatalf("run %d: exit %d: %s", i+1, r.Code, r.Stderr)
		}
		// The runtime's own needs beside the buffers: stacks, frames, state.
		if peak := procStatus(t, pid, "VmHWM"); peak > idle+buffers+32<<20 {
			t.Fatalf("run %d: the agent peaked at %d MiB resident, idling at %d MiB with %d MiB of buffers allowed",
				i+1, peak>>20, idle>>20, buffers>>20)
		}
		deadline := time.Now().Add(3 * time.Second)
		for procStatus(t, pid, "VmRSS") > idle+16<<20 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if rss := procStatus(t, pid, "VmRSS"); rss > idle+16<<20 {
			t.Fatalf("run %d: 3 s after the test the agent still holds %d MiB resident, idling at %d MiB", i+1, rss>>20, idle>>20)
		}
	}
}

// TestMemoryLimits: a test needing more buffers than --max-test-memory is
// refused in words before anything runs; one that fits but would take the
// running tests past --max-memory is refused as busy, and runs once the
// memory is free.
func TestMemoryLimits(t *testing.T) {
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), MaxMemory: 48 << 20, MaxTestMemory: 40 << 20})
	defer stop()
	s, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Limits.MaxTestMemory != 40<<20 {
		t.Fatalf("announced %d bytes per test, want 40 MiB", s.Limits.MaxTestMemory)
	}
	big := wire.TestSpec{Kind: wire.KindStream, Direction: wire.Forward, Streams: 11, Block: 4 << 20, Duration: time.Second, Interval: time.Second}
	if _, err := s.Open(context.Background(), big); err == nil || !strings.Contains(err.Error(), "needs 44 MiB of buffers on the agent; it allows 40 MiB per test (its --max-test-memory): use fewer streams or a smaller --block") {
		t.Fatalf("a test of 44 MiB against --max-test-memory 40 MiB: %v", err)
	}

	// A test of 9 streams of 4 MiB reads (36 MiB) is open...
	s1, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	nine := big
	nine.Streams = 9
	if _, err := s1.Open(context.Background(), nine); err != nil {
		t.Fatal(err)
	}
	// ...and a second test of 16 MiB does not fit beside it.
	s2, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	rev := stream.Config{Direction: wire.Reverse, Streams: 1, Block: 16 << 20, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}
	_, err = stream.Run(context.Background(), s2, rev, func(result.Interval) {})
	if !errors.Is(err, client.ErrBusy) || !strings.Contains(err.Error(), "the tests running hold 36 MiB of buffers and this one needs 16 MiB, past the agent's 48 MiB (its --max-memory)") {
		t.Fatalf("a 16 MiB test beside 36 MiB of 48: %v", err)
	}
	s1.Close() // the first client goes: its memory is free at once
	for t0 := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		s3, err := dial(t, addr, itest.Secret)
		if err != nil {
			t.Fatal(err)
		}
		_, err = stream.Run(context.Background(), s3, rev, func(result.Interval) {})
		s3.Close()
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrBusy) || time.Since(t0) > 2*time.Second {
			t.Fatalf("the same test once the first client left: %v", err)
		}
	}
}

// TestCPUTest: the agent measures compression on its own cores (the
// synthetic corpus, the same bytes the client generates), and refuses in
// words what its limits do not allow.
func TestCPUTest(t *testing.T) {
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), MaxDuration: 10 * time.Second})
	defer stop()
	s, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Runs(wire.KindCPU) {
		t.Fatal("the agent does not announce cpu tests")
	}
	spec := func(codecs []string, sample int64, d time.Duration) wire.TestSpec {
		return wire.TestSpec{Kind: wire.KindCPU, Duration: d, Interval: 100 * time.Millisecond,
			CPU: &wire.CPUSpec{Codecs: codecs, SampleBytes: sample, Seed: 1}}
	}
	for _, c := range []struct {
		name string
		spec wire.TestSpec
		want string
	}{
		{"no spec", wire.TestSpec{Kind: wire.KindCPU, Duration: time.Second, Interval: time.Second}, "names no codecs"},
		{"unknown codec", spec([]string{"brotli"}, 1<<20, time.Second), `unknown codec "brotli"`},
		{"a sample too big", spec([]string{"lz4"}, 1<<30, time.Second), "the agent generates 1 MiB to 64 MiB"},
		{"longer than --max-duration", spec([]string{"lz4", "zstd-3", "gzip-6"}, 1<<20, 2*time.Second), "3 codecs × 2s each way: the agent allows up to 10s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := dial(t, addr, itest.Secret)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Open(context.Background(), c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
	done, err := s.RunFar(context.Background(), spec([]string{"lz4"}, 2<<20, 200*time.Millisecond), func(*wire.Accepted) error { return nil }, func(result.Interval) {})
	if err != nil || done == nil || done.Compression == nil || len(done.Compression.Codecs) != 1 {
		t.Fatalf("done %+v, err %v", done, err)
	}
	c := done.Compression.Codecs[0]
	if c.Codec != "lz4" || c.Ratio <= 1 || c.Compress.PerCore <= 0 || done.Compression.Sample.Kind != result.SampleSynthetic {
		t.Fatalf("lz4 on the agent: %+v (sample %+v)", c, done.Compression.Sample)
	}
}

// TestWelcomeFacts: the agent tells its host's facts in its Welcome, the
// interface being the one routing back to the client (loopback here).
func TestWelcomeFacts(t *testing.T) {
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), Software: "narrows test"})
	defer stop()
	s, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := s.Facts
	if f == nil {
		t.Fatal("the agent told no facts")
	}
	if f.OS != runtime.GOOS || f.Cores != runtime.NumCPU() || f.Narrows != "narrows test" {
		t.Errorf("facts: %+v", f)
	}
	if runtime.GOOS == "linux" && !slowFacts(f.Missing) && (len(f.Interfaces) != 1 || f.Interfaces[0].MTU != 65536) {
		t.Errorf("the route back to 127.0.0.1 is loopback, MTU 65536: %+v", f.Interfaces)
	}
	if s.PeerIP() != "127.0.0.1" {
		t.Errorf("PeerIP %q", s.PeerIP())
	}
}

// slowFacts says the facts were cut short by their time bound (a loaded
// machine): only the portable ones are there.
func slowFacts(missing []string) bool {
	for _, m := range missing {
		if strings.Contains(m, "took longer than") {
			return true
		}
	}
	return false
}

// TestReleaseOnlyAfterAuth: a real agent tells its release only to a
// client that proved it holds the secret. What a stranger gets without
// the secret (the Challenge to its Hello, the refusal of a wrong proof or
// of a protocol it does not speak) holds the protocol version, not the
// release, which told a scanner which known bugs to try; an authenticated
// client learns it as before, and `narrows net rr` reports it.
func TestReleaseOnlyAfterAuth(t *testing.T) {
	a := itest.StartAgent(t, nil)
	v := strings.Fields(itest.Run(t, 10*time.Second, nil, "version").Stdout)
	if len(v) < 2 {
		t.Fatalf("narrows version: %q", v)
	}
	release := v[1]
	// stranger sends a Hello (over protocol versions lo to hi), then a
	// proof made with secret, and returns the frames the agent sent.
	stranger := func(lo, hi int, secret string) []wire.Frame {
		c, err := net.Dial("tcp", a.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		nonce := wire.NewNonce()
		wire.WriteMagic(c)
		wire.WriteFrame(c, wire.THello, wire.Hello{MinVersion: lo, MaxVersion: hi, Role: wire.RoleControl, Nonce: nonce})
		var frames []wire.Frame
		for {
			f, err := wire.ReadFrame(c)
			if err != nil {
				return frames
			}
			frames = append(frames, f)
			var ch wire.Challenge
			if f.Decode(wire.TChalleng, &ch) == nil {
				wire.WriteFrame(c, wire.TAuth, wire.Auth{MAC: wire.Proof([]byte(secret), "client", ch.Session, nonce, ch.Nonce)})
			}
		}
	}
	for _, c := range []struct {
		name   string
		lo, hi int
		secret string
		want   []wire.Type
	}{
		{"no secret", wire.MinVersion, wire.Version, "not-the-secret-0123456789", []wire.Type{wire.TChalleng, wire.TError}},
		{"another protocol", wire.Version + 1, wire.Version + 1, "", []wire.Type{wire.TError}},
	} {
		frames := stranger(c.lo, c.hi, c.secret)
		var types []wire.Type
		for _, f := range frames {
			types = append(types, f.Type)
			if strings.Contains(string(f.Body), release) {
				t.Errorf("%s: the agent told its release %s in its %s: %s", c.name, release, f.Type, f.Body)
			}
		}
		if fmt.Sprint(types) != fmt.Sprint(c.want) {
			t.Errorf("%s: frames %v, want %v", c.name, types, c.want)
		}
	}

	s, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s.Software != release {
		t.Errorf("an authenticated client learnt the release %q, want %q", s.Software, release)
	}
	r := itest.Run(t, 30*time.Second, nil, "net", "rr", "--to", a.Addr, "--duration", "300ms", "--json")
	if _, sum := itest.Records(t, r.Stdout); r.Code != 0 || sum["agent_software"] != release {
		t.Errorf("net rr: exit %d, agent_software %v, want %q: %s", r.Code, sum["agent_software"], release, r.Stderr)
	}
	if r := itest.Run(t, 30*time.Second, nil, "net", "rr", "--to", a.Addr, "--duration", "300ms"); !strings.Contains(r.Stdout, "(agent "+release+")") {
		t.Errorf("net rr's table does not name the agent's release %s:\n%s", release, r.Stdout)
	}
}

// TestTryRefusals: a test that asks the agent to change a setting is
// refused in words, before anything changes, when the agent's operator
// did not allow it or the test is not the one kind that change is for,
// whatever the client checked.
func TestTryRefusals(t *testing.T) {
	stream := func(f func(*wire.TestSpec)) wire.TestSpec {
		s := wire.TestSpec{Kind: wire.KindStream, Direction: wire.Forward, Streams: 1, Duration: time.Second, Interval: time.Second, Block: 1024}
		f(&s)
		return s
	}
	rr := wire.TestSpec{Kind: wire.KindRR, Request: 64, Response: 64, Duration: time.Second, Interval: time.Second, Offloads: true}
	for _, c := range []struct {
		name  string
		allow bool
		spec  wire.TestSpec
		want  string
	}{
		{"offloads not allowed", false, stream(func(s *wire.TestSpec) { s.Offloads = true }), "starts it with --allow-try"},
		{"offloads both ways", true, stream(func(s *wire.TestSpec) { s.Offloads, s.Direction = true, wire.Bidir }), "one stream, forward or reverse, not 1 bidir"},
		{"offloads of four streams", true, stream(func(s *wire.TestSpec) { s.Offloads, s.Streams = true, 4 }), "one stream, forward or reverse, not 4 forward"},
		{"offloads beside a steering", true, stream(func(s *wire.TestSpec) { s.Offloads, s.Steer = true, &wire.SteerSpec{OffCore: 0} }), "not both: one change at a time"},
		{"offloads of round trips", true, rr, "a rr test cannot change the agent's offloads: only a stream test"},
		{"coalescing of a stream", true, stream(func(s *wire.TestSpec) { s.Coalesce = true }), "cannot change the agent's coalescing: only a round-trip test"},
		{"steering not allowed", false, stream(func(s *wire.TestSpec) { s.Steer = &wire.SteerSpec{OffCore: 0} }), "starts it with --allow-try"},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), AllowTry: c.allow})
			defer stop()
			s, err := dial(t, addr, itest.Secret)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Open(context.Background(), c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}
