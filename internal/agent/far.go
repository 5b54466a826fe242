package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrows/narrows/internal/netio"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// farKind is a test the agent runs on its own resources (its storage, its
// CPU) instead of on data connections: the client asks, the agent
// measures with the probe package a local run uses, streams the probe's
// interval records as they come and sends its result at the end. The
// agent owns only the allowlist and the limits. Another kind (cpu:
// compression throughput) is one more entry in farKinds and a file
// beside disk.go.
type farKind struct {
	// check refuses, in words, a test outside the operator's limits
	// (wire.CodeLimit unless it says otherwise), before it takes a test
	// slot or memory.
	check func(s *Server, spec wire.TestSpec) error
	// open takes what the test holds (a filesystem, a test file) once it
	// has its slot and memory, or says why not.
	open func(s *Server, spec wire.TestSpec) (farTest, *wire.RemoteError)
}

// farTest is one far-side test, opened.
type farTest interface {
	// accepted adds what the client learns before it starts the test.
	accepted(*wire.Accepted)
	// prepare readies the test after Start (the disk test writes its
	// file out), within the agent's --max-duration; the client is kept
	// posted meanwhile.
	prepare(ctx context.Context) error
	// run measures, emitting interval records, and puts its result in
	// done, partial when it ends early.
	run(ctx context.Context, emit probe.Emit, done *wire.Done) error
	// limit is the longest run may take.
	limit() time.Duration
	// close releases everything the test holds; it runs once, on every
	// way out.
	close()
}

// connTest is a far-side test with data connections (commit, whose log
// blocks arrive on one): runFar opens them (wire.TestSpec.DataConns) and
// hands them over after Start, before the test prepares.
type connTest interface {
	take(socks []*netio.Socket)
}

// farKinds are the far-side tests this agent runs, by wire kind.
var farKinds = map[string]farKind{
	wire.KindDisk:   {check: (*Server).checkDisk, open: (*Server).openDisk},
	wire.KindCPU:    {check: (*Server).checkCPU, open: (*Server).openCPU},       // cpu.go
	wire.KindCommit: {check: (*Server).checkCommit, open: (*Server).openCommit}, // commit.go
	wire.KindHost:   {check: (*Server).checkHost, open: (*Server).openHost},     // host.go
}

// capabilities are what the agent announces in its Challenge: each
// far-side kind it runs.
func capabilities() []string {
	c := []string{wire.CapTogether}
	for k := range farKinds {
		c = append(c, wire.KindCapability(k))
	}
	slices.Sort(c)
	return c
}

// refusedError marks an error that a person fixes where the test runs (no
// space left, a read-only filesystem): the client is told wire.CodeRefused.
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }

// Why a far-side test's context ends early.
var (
	errStoppedByClient = errors.New("stopped by the client")
	errClientGone      = errors.New("client gone")
	errNotReading      = errors.New("the client stopped reading the test's reports")
)

// farQueue is how many interval frames may wait for the client: far
// more than a connection's send buffer leaves waiting, so only a client
// that has stopped reading fills it.
const farQueue = 256

// maxReason bounds an error's words in Done, so the account fits a frame.
const maxReason = 512

// runFar runs an accepted far-side test on the control connection ctl.
// It returns why the test ended, or an error when the client is lost.
// Whatever the way out, the test is closed (its file removed) before
// runFar returns, and so before its slot and memory are given back.
func (s *Server) runFar(ctx context.Context, ctl net.Conn, spec wire.TestSpec, kind farKind, free func()) (string, error) {
	ft, refusal := kind.open(s, spec)
	if refusal != nil {
		sendError(ctl, refusal)
		return "", fmt.Errorf("refused: %s", refusal.Message)
	}
	// What the test holds (its file, its filesystem) is let go before the
	// final report, as its slot is (free).
	release := sync.OnceFunc(ft.close)
	defer release()
	acc := wire.Accepted{TestID: newID(), Slots: []wire.Slot{}}
	ft.accepted(&acc)
	if ct, ok := ft.(connTest); ok && spec.DataConns() > 0 {
		states, releaseConns, err := s.awaitSlots(ctx, ctl, spec, acc)
		defer releaseConns() // before the test is closed: its loops have ended
		if err != nil {
			return "", err
		}
		socks := make([]*netio.Socket, len(states))
		for i, st := range states {
			socks[i] = st.sock
		}
		ct.take(socks)
	} else {
		ctl.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
		if err := wire.WriteFrame(ctl, wire.TAccepted, acc); err != nil {
			return "", err
		}
		if err := wire.Expect(ctl, wire.TStart, &wire.Start{}); err != nil {
			return "", fmt.Errorf("waiting for start: %w", err)
		}
	}

	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	cpu0, cpuErr := sysinfo.CPUTime()

	// The control connection stays readable for a Stop, or EOF when the
	// client vanishes, which stops the test at once; its deadline covers
	// the preparation (at most --max-duration) and the run.
	var goes chan wire.Go
	hold := time.Duration(0)
	if spec.Hold {
		goes, hold = make(chan wire.Go, 1), s.cfg.MaxDuration
	}
	unwatch := watchControl(ctl, start.Add(s.cfg.MaxDuration+hold+ft.limit()+s.cfg.DataTimeout), cancel, goes)

	// One sender writes the frames, so the probe's emit never waits on
	// the client: a client that stops reading fills the queue or times
	// out a write, and either ends the test.
	frames := make(chan wire.Interval, farQueue)
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		for iv := range frames {
			ctl.SetWriteDeadline(time.Now().Add(s.cfg.DataTimeout))
			if err := wire.WriteFrame(ctl, wire.TInterval, iv); err != nil {
				cancel(errClientGone)
				for range frames {
				}
				return
			}
		}
	}()
	var index atomic.Int64
	send := func(iv wire.Interval) {
		iv.Index, iv.Elapsed = int(index.Add(1)-1), time.Since(start)
		select {
		case frames <- iv:
		default:
			cancel(errNotReading)
		}
	}

	var done wire.Done
	err := s.prepareFar(tctx, ft, spec.Interval, send)
	if err == nil && spec.Hold {
		send(wire.Interval{Stage: wire.StageReady})
		err = s.awaitGo(tctx, goes, spec.Interval, send)
	}
	if err == nil {
		done.Started = time.Now().UnixNano()
		rctx, rcancel := context.WithTimeoutCause(tctx, ft.limit(), errors.New("the test ran past its time limit"))
		// A test that reports only at its end (cpu) still tells the
		// client every interval that it runs.
		stopBeat := heartbeat(spec.Interval, func() { send(wire.Interval{Stage: wire.StageRun}) })
		err = ft.run(rctx, func(iv result.Interval) { send(wire.Interval{Record: &iv}) }, &done)
		stopBeat()
		if err == nil && rctx.Err() != nil && tctx.Err() == nil {
			err = context.Cause(rctx) // a probe stopped by its context returns what it has, and no error
		}
		rcancel()
	}
	close(frames)
	<-senderDone
	unwatch()

	cause := context.Cause(tctx)
	switch {
	case ctx.Err() != nil:
		// Shutting down: Serve has closed the connection already.
		return "the agent is shutting down", nil
	case errors.Is(cause, errClientGone) || errors.Is(cause, errNotReading):
		return cause.Error(), cause
	case cause != nil:
		done.Reason = cause.Error()
	case err != nil:
		done.Reason = clip(err.Error(), maxReason)
		if errors.As(err, new(refusedError)) {
			done.Code = wire.CodeRefused
		}
	}
	done.Elapsed = time.Since(start)
	if cpuErr == nil {
		c, _ := sysinfo.CPUTime()
		done.CPU = c - cpu0
	}
	ctl.SetWriteDeadline(time.Now().Add(s.cfg.DataTimeout))
	release()
	free()
	if err := wire.WriteFrame(ctl, wire.TDone, done); err != nil {
		return done.Reason, err
	}
	if done.Reason == "" {
		return "completed", nil
	}
	return done.Reason, nil
}

// awaitGo waits for a held test's Go, at most --max-duration, telling
// the client every interval that it is ready, then until the Go's
// instant: at once when it has passed, and never more than
// --max-duration ahead (a clock a client misread, or a client's lie).
func (s *Server) awaitGo(ctx context.Context, goes <-chan wire.Go, interval time.Duration, send func(wire.Interval)) error {
	stop := heartbeat(interval, func() { send(wire.Interval{Stage: wire.StageReady}) })
	defer stop()
	wait := time.NewTimer(s.cfg.MaxDuration)
	defer wait.Stop()
	var g wire.Go
	select {
	case g = <-goes:
	case <-wait.C:
		return fmt.Errorf("held ready %s without the client's go (the agent's --max-duration)", s.cfg.MaxDuration)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	ahead := time.Until(time.Unix(0, g.At))
	if ahead > s.cfg.MaxDuration {
		return fmt.Errorf("the go named an instant %s ahead, past the agent's --max-duration %s: check both hosts' clocks", ahead.Round(time.Millisecond), s.cfg.MaxDuration)
	}
	if ahead <= 0 {
		return nil
	}
	at := time.NewTimer(ahead)
	defer at.Stop()
	select {
	case <-at.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// prepareFar runs ft's preparation within --max-duration, sending the
// client a frame every interval meanwhile so that its deadline holds.
func (s *Server) prepareFar(ctx context.Context, ft farTest, interval time.Duration, send func(wire.Interval)) error {
	pctx, cancel := context.WithTimeoutCause(ctx, s.cfg.MaxDuration,
		fmt.Errorf("preparing the test took longer than the agent's --max-duration %s", s.cfg.MaxDuration))
	defer cancel()
	stop := heartbeat(interval, func() { send(wire.Interval{Stage: wire.StagePrepare}) })
	err := ft.prepare(pctx)
	stop()
	if errors.Is(err, context.DeadlineExceeded) {
		err = context.Cause(pctx)
	}
	return err
}

// clip cuts s to at most n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// watchControl reads the control connection while a test runs, until
// deadline: the client's Stop, or EOF when it vanishes, ends the test
// through stop, with why as the cause. The function it returns stops the
// watcher and waits for it, so that the connection can be used again.
//
// A held test (wire.TestSpec.Hold) passes goes: the client's one Go is
// delivered there, and the watch goes on for a Stop.
func watchControl(ctl net.Conn, deadline time.Time, stop context.CancelCauseFunc, goes chan<- wire.Go) (unwatch func()) {
	ctl.SetDeadline(time.Time{})
	ctl.SetReadDeadline(deadline)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := wire.ReadFrame(ctl)
		if err == nil && f.Type == wire.TGo && goes != nil {
			var g wire.Go
			if err := f.Decode(wire.TGo, &g); err != nil {
				stop(fmt.Errorf("protocol error: %w", err))
				return
			}
			goes <- g // buffered for one; the next frame may only be a Stop
			goes = nil
			f, err = wire.ReadFrame(ctl)
		}
		switch {
		case err == nil && f.Type == wire.TStop:
			stop(errStoppedByClient)
		case err == nil:
			stop(fmt.Errorf("protocol error: %s during a test", f.Type))
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Stopped by unwatch, or past every limit: the test's own
			// deadlines end it.
		default:
			stop(errClientGone)
		}
	}()
	return func() {
		ctl.SetReadDeadline(time.Now())
		<-done
	}
}

// heartbeat calls beat every interval until the function it returns is
// called (which waits for it to stop).
func heartbeat(interval time.Duration, beat func()) (stop func()) {
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				beat()
			case <-quit:
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-stopped
	}
}
