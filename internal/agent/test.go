package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrows/narrows/internal/hostchange"
	"github.com/narrows/narrows/internal/netio"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// plan lays out the data connections a test needs, each with a fresh
// single-use token.
func plan(spec wire.TestSpec) []wire.Slot {
	var roles []string
	switch spec.Kind {
	case wire.KindRR:
		roles = []string{wire.SlotEcho}
	case wire.KindCommit:
		roles = []string{wire.SlotLog}
	case wire.KindStream:
		for range spec.Streams {
			if spec.Direction != wire.Reverse {
				roles = append(roles, wire.SlotSink)
			}
			if spec.Direction != wire.Forward {
				roles = append(roles, wire.SlotSource)
			}
		}
	}
	slots := make([]wire.Slot, len(roles))
	for i, r := range roles {
		tok := make([]byte, 16)
		rand.Read(tok)
		slots[i] = wire.Slot{ID: i, Role: r, Token: tok}
	}
	return slots
}

type slotState struct {
	slot  wire.Slot
	conn  net.Conn      // as accepted: the server's bookkeeping
	sock  *netio.Socket // the data plane's hold on it
	count atomic.Int64  // bytes (sink, source) or round trips (echo)
	end   atomic.Int64  // nanoseconds after start when the slot finished; 0 while running
	err   error
}

// runTest runs one accepted test on the control connection ctl. It returns
// why the test ended, or an error when the control connection is lost.
// free gives the test's slot back; it is called before Done is sent.
func (s *Server) runTest(ctx context.Context, ctl net.Conn, spec wire.TestSpec, free func()) (string, error) {
	acc := wire.Accepted{TestID: newID()}
	var dev string
	unsteer := func() {}
	if spec.Kind == wire.KindStream {
		// What autotuning may grow this host's windows to: a plan at
		// another RTT needs it when the stream was not window-bound here.
		b := sysinfo.ReadTCPBuffers()
		acc.TCPBuffers = &b
		// The interface toward the client (its data connections come
		// from the same address), found before the test's clock starts.
		dev = sysinfo.InterfaceName(ctl.LocalAddr())
	}
	// A steered test moves the receive's protocol work first, and puts it
	// back before Done (or, should this process die, its guardian does).
	var steering *result.Steering
	if spec.Steer != nil {
		st, undo, err := hostchange.SteerRPS(dev, spec.Steer.OffCore)
		if err != nil {
			return "", refuseChange(ctl, "receive steering", err)
		}
		st.End = result.EndAgent
		steering = st
		s.cfg.Logger.Info("receive steered for the test", "interface", dev, "off_core", st.OffCore, "cpus", st.CPUs, "before", st.Before)
		unsteer = sync.OnceFunc(func() {
			undo(st)
			s.cfg.Logger.Info("receive steering put back", "interface", dev, "restored", st.Restored, "error", st.Error)
		})
		defer unsteer()
	}
	// A round-trip test that asks for it turns this host's receive
	// interrupt coalescing to its least, and puts it back before Done.
	var coalescing *result.CoalescingChange
	uncoalesce := func() {}
	if spec.Coalesce {
		cdev := sysinfo.InterfaceName(ctl.LocalAddr())
		ch, undo, err := hostchange.LeastCoalescing(cdev)
		if err != nil {
			return "", refuseChange(ctl, "interrupt coalescing", err)
		}
		ch.End = result.EndAgent
		coalescing = ch
		s.cfg.Logger.Info("interrupt coalescing at its least for the test", "interface", cdev, "before", ch.Before, "set", ch.Set)
		uncoalesce = sync.OnceFunc(func() {
			undo(ch)
			s.cfg.Logger.Info("interrupt coalescing put back", "interface", cdev, "restored", ch.Restored, "error", ch.Error)
		})
		defer uncoalesce()
	}
	// A stream that asks for it turns on the offloads this end's part
	// uses where they are off, and turns them off again before Done.
	var offloads *result.OffloadChange
	unoffload := func() {}
	if spec.Offloads {
		role := result.RoleReceiving
		if spec.Direction == wire.Reverse {
			role = result.RoleSending
		}
		ch, undo, err := hostchange.OffloadsOn(dev, role)
		if err != nil {
			return "", refuseChange(ctl, "offloads", err)
		}
		ch.End = result.EndAgent
		offloads = ch
		s.cfg.Logger.Info("offloads on for the test", "interface", dev, "role", role, "on", ch.On)
		unoffload = sync.OnceFunc(func() {
			undo(ch)
			s.cfg.Logger.Info("offloads turned off again", "interface", dev, "restored", ch.Restored, "error", ch.Error)
		})
		defer unoffload()
	}
	states, release, err := s.awaitSlots(ctx, ctl, spec, acc)
	defer release()
	if err != nil {
		return "", err
	}
	// One block for every source (wire.TestSpec.Buffers counts it once),
	// incompressible as iperf3 sends: WAN optimizers must not flatter the link.
	var block []byte
	if spec.Kind == wire.KindStream && spec.Direction != wire.Forward {
		block = make([]byte, spec.Block)
		rand.Read(block)
	}

	limit := min(spec.Duration, s.cfg.MaxDuration) + s.cfg.DataTimeout
	cctx, stop := context.WithCancelCause(ctx) // the client's Stop, or the client gone
	defer stop(nil)
	tctx, cancel := context.WithTimeoutCause(cctx, limit, errors.New("the test ran past its duration"))
	defer cancel()
	// A stream's packet work lands on a core of this machine: its
	// busiest core over the test, split (the client reads its own).
	coreLoad := func() *result.CoreLoad { return nil }
	if spec.Kind == wire.KindStream {
		coreLoad = sysinfo.CoreLoadSince(dev)
	}
	start := time.Now()
	cpu0, cpuErr := sysinfo.CPUTime()
	var stopSources atomic.Bool
	sourceTimer := time.AfterFunc(spec.Duration, func() { stopSources.Store(true) })
	defer sourceTimer.Stop()

	finished := make(chan int, len(states))
	var wg sync.WaitGroup
	var halt atomic.Bool
	for i, st := range states {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.err = runSlot(st, spec, block, &stopSources, &halt, s.cfg.DataTimeout)
			if st.err == nil && st.slot.Role == wire.SlotSource {
				st.err = st.sock.CloseWrite()
			}
			st.end.Store(int64(time.Since(start)))
			finished <- i
		}()
	}

	// The control connection stays readable for a Stop, or EOF if the
	// client vanishes; the watcher is stopped before Done is sent so that
	// it never eats the client's next request.
	unwatch := watchControl(ctl, start.Add(limit), stop, nil)

	ticker := time.NewTicker(spec.Interval)
	defer ticker.Stop()
	idx, left := 0, len(states)
	var reason string
loop:
	for left > 0 {
		select {
		case <-finished:
			left--
		case <-ticker.C:
			// The interval ends when the counts are read, not when the
			// tick was due: on a busy machine this goroutine runs late,
			// and bytes counted after the tick's time made an interval
			// read faster than the line (111 Mbit/s on a 100 Mbit/s
			// line, found by the verdict matrix's invariants).
			slots, at := sample(states)
			iv := wire.Interval{Index: idx, Elapsed: at.Sub(start), Slots: slots}
			if cpuErr == nil {
				c, _ := sysinfo.CPUTime()
				iv.CPU = c - cpu0
			}
			idx++
			ctl.SetWriteDeadline(time.Now().Add(s.cfg.DataTimeout))
			if err := wire.WriteFrame(ctl, wire.TInterval, iv); err != nil {
				reason = "client gone"
				break loop
			}
		case <-tctx.Done():
			reason = context.Cause(tctx).Error()
			break loop
		}
	}
	elapsed := time.Since(start)
	halt.Store(true) // every loop notices within one netio.Slice
	stopSources.Store(true)
	wg.Wait()
	unwatch()
	if c := context.Cause(cctx); c != nil {
		if reason == "" {
			reason = c.Error()
		}
		if errors.Is(c, errClientGone) {
			return reason, c
		}
	}
	if reason == "" {
		reason = "completed"
		for _, st := range states {
			if st.err != nil {
				reason = fmt.Sprintf("data connection %d: %v", st.slot.ID, st.err)
				break
			}
		}
	}
	slots, _ := sample(states)
	done := wire.Done{Slots: slots, Elapsed: elapsed, Reason: reason}
	if reason == "completed" {
		done.Reason = ""
	}
	if cpuErr == nil {
		c, _ := sysinfo.CPUTime()
		done.CPU = c - cpu0
	}
	done.Cores = coreLoad()
	if steering != nil {
		unsteer()
		done.Steering = boundSteering(steering)
	}
	if offloads != nil {
		unoffload()
		c := *offloads
		c.Interface, c.Error = clip(c.Interface, wire.MaxSteeringText), clip(c.Error, wire.MaxSteeringText)
		done.Offloads = &c
	}
	if coalescing != nil {
		uncoalesce()
		c := *coalescing
		c.Interface, c.Error = clip(c.Interface, wire.MaxSteeringText), clip(c.Error, wire.MaxSteeringText)
		done.Coalescing = &c
	}
	ctl.SetDeadline(time.Now().Add(s.cfg.DataTimeout))
	free()
	if err := wire.WriteFrame(ctl, wire.TDone, done); err != nil {
		return reason, err
	}
	return reason, nil
}

// awaitSlots lays out the data connections spec needs, sends the client
// acc with their tokens, and waits until it has opened them all and sent
// Start. release closes the connections that arrived (and any that
// arrive late); the caller calls it on every way out, error or not.
func (s *Server) awaitSlots(ctx context.Context, ctl net.Conn, spec wire.TestSpec, acc wire.Accepted) (states []*slotState, release func(), _ error) {
	slots := plan(spec)
	acc.Slots = slots
	waits := make([]*pendingSlot, len(slots))
	s.mu.Lock()
	for i, sl := range slots {
		waits[i] = &pendingSlot{slot: sl, deliver: make(chan net.Conn, 1)}
		s.pending[string(sl.Token)] = waits[i]
	}
	s.mu.Unlock()
	states = make([]*slotState, len(slots))
	release = func() {
		s.mu.Lock()
		for i, sl := range slots {
			delete(s.pending, string(sl.Token))
			waits[i].abandoned = true // attach now closes what it has not handed over
		}
		s.mu.Unlock()
		for i, w := range waits {
			select { // a connection delivered after we gave up
			case c := <-w.deliver:
				s.release(c)
			default:
				if states[i] != nil {
					states[i].sock.Close()
					s.release(states[i].conn)
				}
			}
		}
	}
	ctl.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := wire.WriteFrame(ctl, wire.TAccepted, acc); err != nil {
		return states, release, err
	}
	// The client's next frame is its Start, sent once its data connections
	// are ready; read it now, so that a client that goes away while the
	// agent waits for them frees the test at once, not at the deadline.
	type frame struct {
		f   wire.Frame
		err error
	}
	first := make(chan frame, 1)
	go func() {
		f, err := wire.ReadFrame(ctl)
		first <- frame{f, err}
	}()
	var startFrame *frame
	// The reader must be done before the control connection is used again.
	defer func() {
		if startFrame == nil {
			ctl.SetReadDeadline(time.Now())
			<-first
		}
	}()
	timer := time.NewTimer(s.cfg.HandshakeTimeout)
	defer timer.Stop()
	early := first
	for i := 0; i < len(waits); {
		w := waits[i]
		select {
		case f := <-early:
			startFrame, early = &f, nil
			if f.err != nil {
				return states, release, fmt.Errorf("client gone before its data connections: %w", f.err)
			}
			continue
		case c := <-w.deliver:
			if tc, ok := c.(*net.TCPConn); ok && spec.Window > 0 {
				tc.SetReadBuffer(int(spec.Window))
				tc.SetWriteBuffer(int(spec.Window))
			}
			sock, err := netio.Take(c)
			if err != nil {
				s.release(c)
				sendError(ctl, &wire.RemoteError{Code: wire.CodeInternal, Message: "data connection: " + err.Error()})
				return states, release, err
			}
			states[i] = &slotState{slot: w.slot, conn: c, sock: sock}
			i++
		case <-timer.C:
			sendError(ctl, &wire.RemoteError{Code: wire.CodeBadRequest, Message: "the client did not open its data connections in time"})
			return states, release, errors.New("data connections not opened in time")
		case <-ctx.Done():
			return states, release, ctx.Err()
		}
	}
	if startFrame == nil {
		f := <-first
		startFrame = &f
	}
	if startFrame.err == nil {
		startFrame.err = startFrame.f.Decode(wire.TStart, &wire.Start{})
	}
	if startFrame.err != nil {
		return states, release, fmt.Errorf("waiting for start: %w", startFrame.err)
	}
	return states, release, nil
}

// sample reads every slot's counts, and the time they were read at,
// before the slower TCP_INFO of each.
func sample(states []*slotState) ([]wire.SlotSample, time.Time) {
	out := make([]wire.SlotSample, len(states))
	for i, st := range states {
		out[i] = wire.SlotSample{Slot: st.slot.ID, Bytes: st.count.Load(), Elapsed: time.Duration(st.end.Load())}
	}
	at := time.Now()
	for i, st := range states {
		if ti, err := sysinfo.ReadTCPInfo(st.sock); err == nil {
			out[i].TCP = ti
		}
	}
	return out, at
}

// runSlot runs one data connection's loop until its natural end (EOF from
// the client, or the duration for a source) or until halt is set.
// Sources write from block, which they share and never change.
func runSlot(st *slotState, spec wire.TestSpec, block []byte, stopSources, halt *atomic.Bool, idle time.Duration) error {
	return st.sock.Run(func(c netio.Conn) error {
		switch st.slot.Role {
		case wire.SlotSink:
			st.sock.ReadBatch(netio.BatchFor(spec.Window))
			return netio.Receive(c, make([]byte, wire.SinkBuffer(spec.Block)), halt, &st.count, idle)
		case wire.SlotSource:
			// stopSources is set at the duration and on halt.
			return netio.Send(c, block, stopSources, &st.count, idle)
		case wire.SlotEcho:
			req := make([]byte, spec.Request)
			resp := make([]byte, spec.Response)
			for {
				if err := netio.ReadFull(c, req, halt, idle); err != nil {
					if err == io.EOF || netio.ErrStopped(err) {
						return nil
					}
					return err
				}
				if err := netio.WriteAll(c, resp, halt, idle); err != nil {
					return err
				}
				st.count.Add(1)
			}
		}
		return fmt.Errorf("unknown slot role %q", st.slot.Role)
	})
}

// refuseChange tells the client in one line why this host's setting
// (what) could not change for its test, and is that line as an error.
func refuseChange(ctl net.Conn, what string, err error) error {
	msg := clip("this host's "+what+": "+err.Error(), wire.MaxSteeringText)
	sendError(ctl, &wire.RemoteError{Code: wire.CodeRefused, Message: msg})
	return errors.New(msg)
}

// boundSteering is st with its strings within wire.MaxSteeringText.
func boundSteering(st *result.Steering) *result.Steering {
	c := *st
	for _, p := range []*string{&c.Error, &c.Interface, &c.CPUs, &c.Mask, &c.Before} {
		*p = clip(*p, wire.MaxSteeringText)
	}
	return &c
}
