// Package stream is the bulk-throughput probe: one stream by default, as a
// replication connection is one stream, then N in parallel when asked, so
// the single stream can be set against what the link carries in aggregate.
package stream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/netio"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// Config is what to measure.
type Config struct {
	Direction string // wire.Forward, wire.Reverse or wire.Bidir
	Streams   int
	Duration  time.Duration
	Interval  time.Duration
	Block     int64
	Window    int64
	// ParallelOnly runs only the Streams phase, not one stream first
	// (net rr --under-load's load).
	ParallelOnly bool
	// TryRPS runs, last, single streams as is and with the receiving
	// end's protocol work moved off the core busiest in the single
	// stream's run (RPS; put back after each), in turn, until the gain is
	// told from noise (tryPairs): the rate with that cause removed.
	TryRPS bool
	// TryOffloads runs, last, single streams as is and with the offloads
	// each end's part uses (the sender's tso and gso, the receiver's gro)
	// turned on where they are off (off again after each), in turn,
	// until the gain is told from noise (tryPairs).
	TryOffloads bool
	// steered and offloads, when set, ask the agent for the phase's
	// change (TestSpec.Steer off steered.OffCore, TestSpec.Offloads),
	// and are filled in from its Done.
	steered  *result.Steering
	offloads *result.OffloadChange
	// held is a fleet's host's run (Held): its hold before the start,
	// its lean keeping, and where what it reports goes.
	held *heldPhase
}

// heldPhase is what Held asks of runPhase, and what it tells back.
type heldPhase struct {
	hold func() error
	out  *HeldRun
}

// Run measures. With Streams > 1 it runs twice: one stream, then Streams
// in parallel, each for Duration. On error the result holds what was
// measured until then.
func Run(ctx context.Context, s *client.Session, cfg Config, emit probe.Emit) (*result.Stream, error) {
	res := &result.Stream{Config: result.StreamConfig{Direction: cfg.Direction, Streams: cfg.Streams,
		Duration: result.Seconds(cfg.Duration), Interval: result.Seconds(cfg.Interval), BlockBytes: cfg.Block, WindowBytes: cfg.Window,
		TryRPS: cfg.TryRPS, TryOffloads: cfg.TryOffloads}}
	phases := []struct {
		name string
		n    int
	}{{result.PhaseSingle, 1}}
	if cfg.ParallelOnly {
		phases[0].n = cfg.Streams
		if cfg.Streams > 1 {
			phases[0].name = result.PhaseParallel
		}
	} else if cfg.Streams > 1 {
		phases = append(phases, struct {
			name string
			n    int
		}{result.PhaseParallel, cfg.Streams})
	}
	var err error
	for _, ph := range phases {
		var runs []result.StreamRun
		var same bool
		var far *sysinfo.TCPBuffers
		runs, same, err = runPhase(ctx, s, cfg, ph.name, ph.n, emit, &far)
		res.Runs = append(res.Runs, runs...)
		if res.Buffers == nil {
			res.Buffers = buffers(far)
		}
		res.SameHost = res.SameHost || same
		if err != nil || ctx.Err() != nil {
			break
		}
	}
	if cfg.TryRPS && err == nil && ctx.Err() == nil {
		err = trySteered(ctx, s, cfg, res, emit)
	}
	if cfg.TryOffloads && err == nil && ctx.Err() == nil {
		err = tryOffloads(ctx, s, cfg, res, emit)
	}
	summarize(res)
	return res, err
}

// readOffloads is what the agent said it turned on for the run (its
// strings made safe when Done was received); an agent that said nothing,
// or named an offload its part does not use, is not believed.
func readOffloads(ch *result.OffloadChange, done *wire.Done) {
	role := ch.Role
	switch {
	case done == nil || done.Offloads == nil:
		ch.Error = "the agent did not say what it turned on"
		return
	case done.Offloads.Role != role:
		ch.Error = fmt.Sprintf("the agent said it was the %s end of a stream it was the %s end of", done.Offloads.Role, role)
		return
	}
	if err := done.Offloads.Check(); err != nil {
		ch.Error = "the agent's account: " + err.Error()
		return
	}
	*ch = *done.Offloads
	ch.End = result.EndAgent
}

// HeldRun is one host's streams of a fleet (Held).
type HeldRun struct {
	// Run is its streams' account; nil when none began.
	Run *result.StreamRun
	// SameHost: the agent answered on this machine.
	SameHost bool
	// Interface is this host's interface the streams left by ("" when no
	// interface holds their address).
	Interface string
	// Started is when its Start was sent, by this host's clock (zero:
	// never).
	Started time.Time
}

// Held runs cfg.Streams streams at once from this host to the agent, as
// one host of a fleet (fleet net: a primary shipping its log to each
// replica): once their data connections are open it calls hold, which
// returns when the fleet's other hosts are ready too (an error from it
// ends the run before it starts), then starts them. It keeps one stream
// run's account, less what grows with the run's length (its intervals,
// and the start-up and steady-state split of its retransmits made from
// them) and less this host's CPU and cores, which every host's streams
// share: so a fleet's memory follows its hosts, not the run's length.
// The senders of every host share one block. On error the HeldRun holds
// what was measured until then.
func Held(ctx context.Context, s *client.Session, cfg Config, hold func() error) (*HeldRun, error) {
	cfg.Direction, cfg.TryRPS, cfg.TryOffloads, cfg.steered, cfg.offloads = wire.Forward, false, false, nil, nil
	out := &HeldRun{}
	cfg.held = &heldPhase{hold: hold, out: out}
	phase := result.PhaseSingle
	if cfg.Streams > 1 {
		phase = result.PhaseParallel
	}
	var far *sysinfo.TCPBuffers
	runs, same, err := runPhase(ctx, s, cfg, phase, cfg.Streams, func(result.Interval) {}, &far)
	out.SameHost = same
	if len(runs) > 0 {
		out.Run = &runs[0]
	}
	return out, err
}

// shared is the one block every sender of a fleet's hosts writes from
// (they only read it), incompressible as iperf3 sends: a fleet of a
// thousand hosts holds one, not a thousand.
func shared(size int64) []byte {
	sharedBlock.Lock()
	defer sharedBlock.Unlock()
	if int64(len(sharedBlock.b)) != size {
		sharedBlock.b = make([]byte, size)
		rand.Read(sharedBlock.b)
	}
	return sharedBlock.b
}

var sharedBlock struct {
	sync.Mutex
	b []byte
}

func summarize(res *result.Stream) {
	if len(res.Runs) > 0 {
		res.Throughput = res.Runs[0].Throughput
	}
	for _, par := range res.Runs {
		if par.Phase != result.PhaseParallel {
			continue
		}
		for _, one := range res.Runs {
			if one.Phase == result.PhaseSingle && one.Direction == par.Direction && one.Throughput > 0 {
				res.Comparison = &result.Comparison{Direction: par.Direction, Single: one.Throughput,
					Aggregate: par.Throughput, Streams: par.Streams, Ratio: par.Throughput / one.Throughput}
				return
			}
		}
	}
}

// endpoint is the client's end of one data connection.
type endpoint struct {
	dc    client.DataConn
	send  bool // the client sends (the agent's slot is a sink)
	sock  *netio.Socket
	count atomic.Int64
	end   atomic.Int64 // ns after start when it finished
	err   error
	final *sysinfo.TCPInfo
}

func (e *endpoint) tcp() *sysinfo.TCPInfo {
	ti, err := sysinfo.ReadTCPInfo(e.sock)
	if err != nil {
		return nil
	}
	return ti
}

// sameHost says a data connection joins two sockets of one machine (a
// loopback address, or the machine's own address at both ends): nothing
// crosses a network. ipv6 says its packets carry the 40-byte IPv6 header.
func sameHost(c net.Conn) (same, ipv6 bool) {
	remote, ok := c.RemoteAddr().(*net.TCPAddr)
	return sysinfo.SameHost(c.LocalAddr(), c.RemoteAddr()), ok && remote.IP.To4() == nil
}

// buffers are both ends' TCP buffer maxima: this host's, and the agent's
// as its Accepted told them (nil from an older agent).
func buffers(far *sysinfo.TCPBuffers) *result.StreamBuffers {
	here := sysinfo.ReadTCPBuffers()
	b := &result.StreamBuffers{ClientRmemMax: here.RmemMax, ClientWmemMax: here.WmemMax, ClientOS: here.OS,
		ClientRmemLow: here.RmemLow, ClientWmemLow: here.WmemLow}
	if far != nil {
		b.AgentRmemMax, b.AgentWmemMax, b.AgentOS = far.RmemMax, far.WmemMax, far.OS
		b.AgentRmemLow, b.AgentWmemLow = far.RmemLow, far.WmemLow
	}
	return b
}

// runPhase runs one phase; far receives the agent's TCP buffer maxima.
// A phase that asks the agent for a change fills it in from its Done.
func runPhase(ctx context.Context, s *client.Session, cfg Config, phase string, n int, emit probe.Emit, far **sysinfo.TCPBuffers) ([]result.StreamRun, bool, error) {
	spec := wire.TestSpec{Kind: wire.KindStream, Direction: cfg.Direction, Streams: n, Duration: cfg.Duration,
		Interval: cfg.Interval, Block: cfg.Block, Window: cfg.Window, Offloads: cfg.offloads != nil}
	if cfg.steered != nil {
		spec.Steer = &wire.SteerSpec{OffCore: cfg.steered.OffCore}
	}
	t, err := s.Open(ctx, spec)
	if err != nil {
		return nil, false, err
	}
	defer t.Close()
	*far = t.Accepted.TCPBuffers
	same, ipv6 := sameHost(t.Conns[0].Conn)
	eps := make([]*endpoint, len(t.Conns))
	batch := netio.BatchFor(cfg.Window) // one rule for every stream of the run
	for i, dc := range t.Conns {
		sock, err := netio.Take(dc.Conn)
		if err != nil {
			return nil, same, fmt.Errorf("stream: %w", err)
		}
		defer sock.Close()
		eps[i] = &endpoint{dc: dc, send: dc.Slot.Role == wire.SlotSink, sock: sock}
	}
	// This end's interface, and its cores read, before the stream
	// starts: the interfaces' list and the kernel's counters are read
	// off its first milliseconds. The path's packets cross the interface
	// both ways, so its link layer is theirs on the first hop (the far
	// end's is not told).
	dev := sysinfo.InterfaceName(t.Conns[0].Conn.LocalAddr())
	hp := cfg.held
	if hp != nil {
		hp.out.Interface = dev
		if err := hp.hold(); err != nil {
			return nil, same, err
		}
	}
	// A fleet's hosts share this host's CPU and cores: they are not
	// read for each (and would cost a read of every core's counters per
	// host at the start).
	coreLoad := func() *result.CoreLoad { return nil }
	if hp == nil {
		coreLoad = sysinfo.CoreLoadSince(dev)
	}
	if err := t.Start(ctx); err != nil {
		return nil, same, err
	}
	start := time.Now()
	if hp != nil {
		hp.out.Started = start
	}
	var cpu0 time.Duration
	cpuErr, cpuLimit := errShared, func() (float64, float64) { return 0, 0 }
	if hp == nil {
		cpu0, cpuErr = sysinfo.CPUTime()
		cpuLimit = sysinfo.CPULimitSince()
	}
	// stop ends the senders at the duration; halt ends everything.
	var stop, halt atomic.Bool
	stopTimer := time.AfterFunc(cfg.Duration, func() { stop.Store(true) })
	defer stopTimer.Stop()
	var interrupted atomic.Bool
	unhook := context.AfterFunc(ctx, func() {
		interrupted.Store(true)
		stop.Store(true) // Start(ctx) tells the agent
	})
	defer unhook()

	var block []byte
	if hp != nil {
		block = shared(cfg.Block)
	} else {
		block = make([]byte, cfg.Block)
		rand.Read(block) // incompressible, as iperf3 sends
	}
	var wg sync.WaitGroup
	for _, e := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.err = loop(e, block, batch, &stop, &halt)
			e.end.Store(int64(time.Since(start)))
		}()
	}

	acc := newAccumulator(phase, n, eps)
	acc.ipv6, acc.link, acc.lean = ipv6, sysinfo.LinkHeaderBytes(dev), hp != nil
	var done *wire.Done
	var lost error
	// held is the agent's last report before the end: it waits for the
	// end, so that the stretch after it (the bytes still in flight when
	// the senders stopped, over a fraction of a millisecond) is folded
	// into it instead of printed as a rate of its own (seen: 2.62 Gbit/s
	// over 5.00-5.01 s on a 300 Mbit/s line). The end follows it within
	// moments, so a live view loses nothing.
	var held *wire.Interval
	limit := start.Add(cfg.Duration + 30*time.Second)
	for done == nil {
		x, err := t.Next(limit)
		if err != nil {
			lost = err
			break
		}
		switch m := x.(type) {
		case *wire.Interval:
			if held != nil {
				for _, iv := range acc.interval(held) {
					emit(iv)
				}
				held = nil
			}
			if m.Elapsed+cfg.Interval/2 > cfg.Duration {
				held = m
				continue
			}
			for _, iv := range acc.interval(m) {
				emit(iv)
			}
		case *wire.Done:
			done = m
		}
	}
	if done == nil && held != nil {
		for _, iv := range acc.interval(held) {
			emit(iv)
		}
	}
	// The agent is finished (or gone): give our receivers a moment to
	// read the last bytes, then unblock whatever is left.
	stop.Store(true)
	waitOrHalt(&wg, &halt, 5*time.Second)
	if done != nil {
		for _, iv := range acc.rest(done) {
			emit(iv)
		}
	}
	for _, e := range eps {
		if e.send {
			e.final = e.tcp()
		}
	}
	var cpu result.CPU
	if cpuErr == nil && done != nil {
		c1, _ := sysinfo.CPUTime()
		wall := time.Since(start)
		cpu = result.CPU{Local: 100 * float64(c1-cpu0) / float64(wall), Available: done.CPU > 0}
		cpu.LocalLimitCores, cpu.LocalThrottledShare = cpuLimit()
	}
	if (cpuErr == nil || hp != nil) && done != nil && done.Elapsed > 0 {
		cpu.Remote, cpu.Available = 100*float64(done.CPU)/float64(done.Elapsed), done.CPU > 0
	}
	if cfg.steered != nil {
		readSteering(cfg.steered, done)
	}
	if cfg.offloads != nil {
		readOffloads(cfg.offloads, done)
	}
	cores := readCores(coreLoad(), done)
	runs := acc.summary(done, cpu)
	for i := range runs {
		runs[i].Cores = cores
	}
	reason := ""
	switch {
	case interrupted.Load():
		reason = probe.Interrupted
	case done != nil && done.Reason != "":
		reason = "agent: " + done.Reason
	}
	for i := range runs {
		runs[i].Stopped = reason
	}
	if lost != nil {
		return runs, same, fmt.Errorf("stream: %w", lost)
	}
	for _, e := range eps {
		if e.err != nil && !interrupted.Load() {
			return runs, same, fmt.Errorf("stream: data connection %d: %w", e.dc.Slot.ID, e.err)
		}
	}
	if done.Reason != "" && !interrupted.Load() {
		return runs, same, fmt.Errorf("stream: the agent ended the test early: %s", done.Reason)
	}
	return runs, same, nil
}

// errShared: this host's CPU is not read for one host of a fleet.
var errShared = errors.New("shared by the fleet's hosts")

// waitOrHalt gives the loops grace to finish by themselves (receivers
// reading the last bytes), then halts them.
func waitOrHalt(wg *sync.WaitGroup, halt *atomic.Bool, grace time.Duration) {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
		return
	case <-time.After(grace):
	}
	halt.Store(true)
	<-ch
}

// idleLimit ends a data loop on which nothing moves (a vanished agent).
const idleLimit = 10 * time.Second

// loop moves one stream's bytes until stop (a sender) or the far end
// closes (a receiver, reading in batches of batch bytes: netio.BatchFor).
func loop(e *endpoint, block []byte, batch int, stop, halt *atomic.Bool) error {
	if e.send {
		if err := e.sock.Run(func(c netio.Conn) error { return netio.Send(c, block, stop, &e.count, idleLimit) }); err != nil {
			return err
		}
		return e.sock.CloseWrite()
	}
	buf := make([]byte, wire.SinkBuffer(int64(len(block))))
	e.sock.ReadBatch(batch)
	return e.sock.Run(func(c netio.Conn) error { return netio.Receive(c, buf, halt, &e.count, idleLimit) })
}

// readCores is both ends' busiest cores over the run: this end's read
// here, the agent's as it sent them, left out (saying why) where they
// could not be true.
func readCores(local *result.CoreLoad, done *wire.Done) *result.Cores {
	c := &result.Cores{Local: local}
	if done != nil && done.Cores != nil {
		if err := done.Cores.Check(); err != nil {
			c.RemoteMissing = "the agent's cores left out (check what answers at its address): " + err.Error()
		} else {
			c.Remote = done.Cores
		}
	}
	if c.Local == nil && c.Remote == nil && c.RemoteMissing == "" {
		return nil
	}
	return c
}

// readSteering is what the agent said it changed for a steered run (its
// strings made safe when Done was received); an agent that said nothing
// put nothing back that we know of.
func readSteering(st *result.Steering, done *wire.Done) {
	if done == nil || done.Steering == nil {
		st.Error = "the agent did not say what it changed"
		return
	}
	*st = *done.Steering
	st.End = result.EndAgent
}
