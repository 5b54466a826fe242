package commit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/netio"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// idleLimit ends a loop when the agent stops answering; reportSlack is
// what the client waits beyond the agent's own deadlines for its reports.
const (
	idleLimit   = 10 * time.Second
	reportSlack = 30 * time.Second
)

// Run measures. On error, or when ctx ends, the result holds what was
// measured until then (Stopped says so). Problems a person fixes (the
// agent too old, no directory to write in, a limit) are probe.UserErrors
// or client.Refusals.
func Run(ctx context.Context, s *client.Session, cfg Config, emit probe.Emit) (*result.Commit, error) {
	res := &result.Commit{}
	if !s.Runs(wire.KindCommit) {
		release := "an earlier release"
		if s.Software != "" {
			release = "narrows " + s.Software
		}
		return res, probe.UserErrorf(nil, "the agent at %s (%s) does not run net commit: upgrade it to the release of this client", s.Addr(), release)
	}
	notes, err := resolve(&cfg, s.Addr(), s.Limits)
	res.Notes = notes
	res.Config = result.CommitConfig{BlockBytes: cfg.Block, InFlight: cfg.InFlight, Ack: cfg.Ack, Flush: cfg.Flush, Path: cfg.Path,
		Duration: result.Seconds(cfg.Duration), Interval: result.Seconds(cfg.Interval)}
	if err != nil {
		return res, err
	}
	spec := Spec(cfg)
	if err := CheckSpec(spec); err != nil {
		return res, probe.UserErrorf(err, "%v", err)
	}
	if err := fits(spec, s.Addr(), s.Limits); err != nil {
		return res, err
	}
	t, err := s.Open(ctx, spec)
	if err != nil {
		return res, err
	}
	defer t.Close()
	if a := t.Accepted.Disk; a != nil && a.Target != nil {
		res.Target = a.Target
		res.Notes = append(res.Notes, a.Notes...)
	}
	if len(t.Conns) != 1 {
		return res, fmt.Errorf("commit: the agent opened %d data connections, want 1", len(t.Conns))
	}
	dc := t.Conns[0]
	res.Connect = result.Seconds(dc.ConnectTime)
	sock, err := netio.Take(dc.Conn)
	if err != nil {
		return res, fmt.Errorf("commit: %w", err)
	}
	defer sock.Close()
	if err := t.Start(ctx); err != nil {
		return res, err
	}

	// stop ends the data loops: ctx, or the agent's final word (or its
	// silence) on the control connection.
	var stop atomic.Bool
	agent := make(chan *wire.Done, 1)
	var ctlErr error
	go func() {
		defer close(agent)
		defer stop.Store(true)
		for {
			// The agent reports every interval while it prepares and runs.
			x, err := t.Next(time.Now().Add(2*cfg.Interval + reportSlack))
			if err != nil {
				ctlErr = err
				return
			}
			if d, ok := x.(*wire.Done); ok {
				agent <- d
				return
			}
		}
	}()
	// Start(ctx) tells the agent to stop; this ends our loops.
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()

	// The agent lays its file out first (within the test's bounds), then
	// says it is ready.
	ready := make([]byte, AckSize)
	prepare := t.Bounds().Prepare + reportSlack
	readyErr := sock.Run(func(c netio.Conn) error { return netio.ReadFull(c, ready, &stop, prepare) })
	var loopErr error
	cpu0, cpuErr := sysinfo.CPUTime()
	if readyErr == nil {
		if cfg.Started != nil {
			cfg.Started(res)
		}
		m := newMeter(cfg, emit)
		if cfg.InFlight == 1 {
			loopErr = m.one(sock, &stop)
		} else {
			loopErr = m.many(sock, &stop)
		}
		m.finish(res)
		res.KernelRTT, res.KernelMinRTT, res.Retransmits, res.TCPUnavailable = probe.KernelRTT(sock)
	}
	interrupted := ctx.Err() != nil
	if interrupted {
		res.Stopped = probe.Interrupted
	}
	sock.CloseWrite() // the agent's loop ends at our EOF
	var done *wire.Done
	select {
	case done = <-agent:
	case <-time.After(idleLimit + reportSlack):
		t.Stop("no account of the test") // ends the reader within StopGrace
		<-agent
	}
	if done != nil && done.Commit != nil {
		a := done.Commit
		res.AgentWrite, res.AgentFlush, res.Flushes = a.AgentWrite, a.AgentFlush, a.Flushes
		if a.Target != nil {
			res.Target = a.Target // with the layout's time
		}
	}
	if cpuErr == nil && done != nil && res.Duration > 0 {
		c1, _ := sysinfo.CPUTime()
		res.CPU = result.CPU{Local: 100 * float64(c1-cpu0) / float64(res.Duration), Available: done.CPU > 0}
		if done.Elapsed > 0 {
			res.CPU.Remote = 100 * float64(done.CPU) / float64(done.Elapsed)
		}
	}
	switch {
	case interrupted:
		return res, nil
	case done != nil && (done.Code == wire.CodeRefused || done.Code == wire.CodeLimit):
		return res, &client.Refusal{Addr: s.Addr(), Message: done.Reason}
	case done != nil && done.Reason != "":
		return res, fmt.Errorf("commit: the agent at %s ended the test early: %s", s.Addr(), done.Reason)
	case errors.Is(ctlErr, client.ErrMisbehaved):
		// What the data connection then says (reset, closed) is its echo.
		return res, fmt.Errorf("commit: %w", ctlErr)
	case readyErr != nil:
		return res, fmt.Errorf("commit: waiting for the agent to lay out its log file: %w", errors.Join(readyErr, ctlErr))
	case loopErr != nil:
		return res, fmt.Errorf("commit: %w", loopErr)
	case done == nil && ctlErr != nil:
		return res, ctlErr
	case done == nil:
		return res, fmt.Errorf("commit: the agent at %s did not report the end of the test", s.Addr())
	case done.Commit == nil || done.Commit.Commits != res.Commits:
		var got int64
		if done.Commit != nil {
			got = done.Commit.Commits
		}
		return res, fmt.Errorf("commit: the agent at %s acknowledged %d blocks, the client counted %d acknowledgements", s.Addr(), got, res.Commits)
	}
	return res, nil
}

// meter times each block from its send to its acknowledgement and
// reports every interval. Only the goroutine that reads acknowledgements
// uses it.
type meter struct {
	cfg        Config
	emit       probe.Emit
	block      []byte
	start, end time.Time
	next       time.Time     // the next report is due
	last       time.Duration // the end of the last report, after start
	now        time.Time     // the last acknowledgement
	total, cur *metric.Histogram
}

func newMeter(cfg Config, emit probe.Emit) *meter {
	m := &meter{cfg: cfg, emit: emit, block: make([]byte, cfg.Block), total: metric.NewHistogram(), cur: metric.NewHistogram()}
	// Incompressible, as iperf3 sends (a WAN optimizer must not flatter
	// the link); each block is stamped with its number besides, so none
	// repeats another.
	rand.Read(m.block)
	m.start = time.Now()
	m.end, m.next, m.now = m.start.Add(cfg.Duration), m.start.Add(cfg.Interval), m.start
	return m
}

// stamp numbers the block about to go.
func (m *meter) stamp(n uint64) { binary.LittleEndian.PutUint64(m.block, n) }

// acked records one block acknowledged at now that was sent at t0.
func (m *meter) acked(now, t0 time.Time) {
	m.now = now
	m.cur.Record(now.Sub(t0))
	// Blocks acknowledged after the end, those still in flight then, go
	// in the last interval (finish), not in a sliver of their own.
	if !now.Before(m.next) && now.Before(m.end) {
		m.report(now)
		for !now.Before(m.next) { // a stall longer than an interval
			m.next = m.next.Add(m.cfg.Interval)
		}
	}
}

func (m *meter) report(now time.Time) {
	el := now.Sub(m.start)
	n := int64(m.cur.Count())
	iv := result.NewInterval(result.ProbeCommit, m.last, el)
	secs := (el - m.last).Seconds()
	ci := &result.CommitInterval{Commits: n, Bytes: n * m.cfg.Block, Latency: result.LatenciesOf(m.cur)}
	if secs > 0 {
		ci.Rate, ci.BytesPerSecond = float64(n)/secs, float64(n*m.cfg.Block)/secs
	}
	iv.Commit = ci
	m.emit(iv)
	m.total.Merge(m.cur)
	m.cur.Reset()
	m.last = el
}

// finish reports the last stretch and fills in the totals.
func (m *meter) finish(res *result.Commit) {
	if m.cur.Count() > 0 {
		m.report(m.now)
	}
	res.Duration = result.Seconds(m.last)
	res.Commits = int64(m.total.Count())
	res.Bytes = res.Commits * m.cfg.Block
	res.Latency = result.LatenciesOf(m.total)
	if m.last > 0 {
		res.Rate = float64(res.Commits) / m.last.Seconds()
		res.BytesPerSecond = float64(res.Bytes) / m.last.Seconds()
	}
}

// readAck reads acknowledgements until one covers block n (counting from
// 1), and returns the count it says.
func readAck(c netio.Conn, buf []byte, n uint64, stop *atomic.Bool) (uint64, error) {
	for {
		if err := netio.ReadFull(c, buf, stop, idleLimit); err != nil {
			return 0, err
		}
		if got := binary.LittleEndian.Uint64(buf); got >= n {
			return got, nil
		}
	}
}

// one is a single session committing: send a block, wait for its
// acknowledgement, again; one goroutine, as rr's loop.
func (m *meter) one(sock *netio.Socket, stop *atomic.Bool) error {
	return quiet(sock.Run(func(c netio.Conn) error {
		ack := make([]byte, AckSize)
		for n := uint64(1); !stop.Load() && m.now.Before(m.end); n++ {
			m.stamp(n)
			t0 := time.Now()
			if err := netio.WriteAll(c, m.block, stop, idleLimit); err != nil {
				return err
			}
			got, err := readAck(c, ack, n, stop)
			if err != nil {
				return err
			}
			if got != n {
				return fmt.Errorf("the agent acknowledged %d blocks after %d were sent", got, n)
			}
			m.acked(time.Now(), t0)
		}
		return nil
	}))
}

// many keeps up to InFlight blocks unacknowledged, as a bulk operation's
// log is shipped: one goroutine sends while a block may go, this one
// reads acknowledgements and times each block.
func (m *meter) many(sock *netio.Socket, stop *atomic.Bool) error {
	n := m.cfg.InFlight
	tokens := make(chan struct{}, n)
	for range n {
		tokens <- struct{}{}
	}
	sent := make(chan time.Time, n) // the send time of each block not yet acknowledged
	quit := make(chan struct{})
	sendErr := make(chan error, 1)
	go func() {
		defer close(sent)
		sendErr <- quiet(sock.Run(func(c netio.Conn) error {
			for i := uint64(1); ; i++ {
				select {
				case <-tokens:
				case <-quit:
					return nil
				}
				t0 := time.Now()
				if stop.Load() || !t0.Before(m.end) {
					return nil
				}
				sent <- t0
				m.stamp(i)
				if err := netio.WriteAll(c, m.block, stop, idleLimit); err != nil {
					return err
				}
			}
		}))
	}()
	err := quiet(sock.Run(func(c netio.Conn) error {
		ack := make([]byte, AckSize)
		var acked, upto uint64
		for t0 := range sent {
			if upto <= acked {
				var err error
				if upto, err = readAck(c, ack, acked+1, stop); err != nil {
					return err
				}
			}
			m.acked(time.Now(), t0)
			acked++
			tokens <- struct{}{}
		}
		return nil
	}))
	close(quit)
	stop.Store(true) // the sender may be writing to an agent that has stopped reading
	for range sent {
	}
	return errors.Join(err, <-sendErr)
}
