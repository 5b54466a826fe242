// Package rr is the request/response probe: one connection, one request
// outstanding at a time, as a chatty application's session waits on each
// query. It times the FULL round trip (sockperf and qperf print half).
package rr

import (
	"context"
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

// Config is what to measure.
type Config struct {
	Request  int64
	Response int64
	Duration time.Duration // ignored when Count > 0 (then it only bounds the run)
	Count    int64
	Rate     float64 // round trips per second; 0 = back to back
	Interval time.Duration
	Queries  int64 // for the wire-time arithmetic
	// Trip, when set, is given each round trip as it is timed, on the
	// measuring goroutine (watch folds them into its own histograms).
	Trip func(time.Duration)
}

// Run measures. On error the result holds what was measured until then.
func Run(ctx context.Context, s *client.Session, cfg Config, emit probe.Emit) (*result.RR, error) {
	res, _, err := run(ctx, s, cfg, false, emit)
	return res, err
}

// run is Run, with the agent's receive coalescing at its least for the
// test when coalesce (TestSpec.Coalesce); it also returns the agent's
// account of the test (nil when it gave none).
func run(ctx context.Context, s *client.Session, cfg Config, coalesce bool, emit probe.Emit) (*result.RR, *wire.Done, error) {
	res := &result.RR{Config: result.RRConfig{RequestBytes: cfg.Request, ResponseBytes: cfg.Response,
		Count: cfg.Count, Rate: cfg.Rate, Interval: result.Seconds(cfg.Interval), Queries: cfg.Queries}}
	if cfg.Count == 0 {
		res.Config.Duration = result.Seconds(cfg.Duration)
	}
	spec := wire.TestSpec{Kind: wire.KindRR, Duration: cfg.Duration, Interval: cfg.Interval,
		Request: cfg.Request, Response: cfg.Response, Coalesce: coalesce}
	t, err := s.Open(ctx, spec)
	if err != nil {
		return res, nil, err
	}
	defer t.Close()
	dc := t.Conns[0]
	res.Connect = result.Seconds(dc.ConnectTime)
	if err := t.Start(ctx); err != nil {
		return res, nil, err
	}
	// The agent reports on the control connection while we measure; read
	// it so it never blocks, and keep its final account.
	agent := make(chan *wire.Done, 1)
	var ctlErr error // read after agent is closed
	// An agent that broke the test's bounds ends our loop too.
	lctx, endLoop := context.WithCancel(ctx)
	defer endLoop()
	go func() {
		defer close(agent)
		for {
			x, err := t.Next(time.Now().Add(cfg.Duration + 30*time.Second))
			if err != nil {
				ctlErr = err
				if errors.Is(err, client.ErrMisbehaved) {
					endLoop()
				}
				return
			}
			if d, ok := x.(*wire.Done); ok {
				agent <- d
				return
			}
		}
	}()

	sock, err := netio.Take(dc.Conn)
	if err != nil {
		return res, nil, fmt.Errorf("rr: %w", err)
	}
	defer sock.Close()
	cpu0, cpuErr := sysinfo.CPUTime()
	total, loopErr := loop(lctx, sock, cfg, emit, res)
	var interrupted bool
	if ctx.Err() != nil {
		interrupted = true
		res.Stopped = probe.Interrupted
	}
	res.KernelRTT, res.KernelMinRTT, res.Retransmits, res.TCPUnavailable = probe.KernelRTT(sock)
	sock.CloseWrite() // the agent's echo ends at our EOF
	var done *wire.Done
	select {
	case done = <-agent:
	case <-time.After(10 * time.Second):
		t.Stop("no account of the test") // ends the reader within StopGrace
		<-agent
	}
	res.RoundTrips = int64(total.Count())
	res.Latency = result.LatencyOf(total)
	if res.Duration > 0 {
		res.Rate = float64(res.RoundTrips) / res.Duration.D().Seconds()
	}
	if cpuErr == nil && done != nil {
		c1, _ := sysinfo.CPUTime()
		res.CPU = result.CPU{Local: 100 * float64(c1-cpu0) / float64(res.Duration), Available: done.CPU > 0}
		if done.Elapsed > 0 {
			res.CPU.Remote = 100 * float64(done.CPU) / float64(done.Elapsed)
		}
	}
	switch {
	case done == nil && errors.Is(ctlErr, client.ErrMisbehaved) && !interrupted:
		return res, done, fmt.Errorf("rr: %w", ctlErr)
	case loopErr != nil && !interrupted:
		return res, done, fmt.Errorf("rr: %w", loopErr)
	case done == nil && !interrupted:
		return res, done, fmt.Errorf("rr: the agent did not report the end of the test")
	case done != nil && done.Reason != "" && !interrupted:
		return res, done, fmt.Errorf("rr: the agent ended the test early: %s", done.Reason)
	}
	return res, done, nil
}

// idleLimit ends the loop when the agent stops answering.
const idleLimit = 10 * time.Second

// loop is the measuring loop: one goroutine, no locks, one clock read per
// round trip beyond the two that time it.
func loop(ctx context.Context, sock *netio.Socket, cfg Config, emit probe.Emit, res *result.RR) (*metric.Histogram, error) {
	req := make([]byte, cfg.Request)
	for i := range req {
		req[i] = 'x' // a string literal, as in SELECT 'xxxx…'
	}
	resp := make([]byte, cfg.Response)
	total, cur := metric.NewHistogram(), metric.NewHistogram()
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	start := time.Now()
	end := start.Add(cfg.Duration)
	nextReport := start.Add(cfg.Interval)
	lastReport := time.Duration(0)
	var gap time.Duration
	if cfg.Rate > 0 {
		gap = time.Duration(float64(time.Second) / cfg.Rate)
	}
	flush := func(now time.Time) {
		el := now.Sub(start)
		iv := result.NewInterval("rr", lastReport, el)
		iv.RoundTrips = int64(cur.Count())
		iv.RoundTripRate = float64(cur.Count()) / (el - lastReport).Seconds()
		l := result.LatencyOf(cur)
		iv.RTT = &l
		emit(iv)
		total.Merge(cur)
		cur.Reset()
		lastReport = el
	}
	var n int64
	now := start
	err := sock.Run(func(c netio.Conn) error {
		for !stop.Load() {
			if cfg.Count > 0 && n >= cfg.Count {
				break
			}
			if cfg.Count == 0 && !now.Before(end) {
				break
			}
			if gap > 0 {
				due := start.Add(time.Duration(n) * gap)
				if cfg.Count == 0 && !due.Before(end) {
					break // the pace puts the next trip past the end
				}
				if wait := time.Until(due); wait > 0 {
					time.Sleep(wait)
				}
			}
			t0 := time.Now()
			if err := netio.WriteAll(c, req, &stop, idleLimit); err != nil {
				return err
			}
			if err := netio.ReadFull(c, resp, &stop, idleLimit); err != nil {
				if netio.ErrStopped(err) {
					return nil
				}
				return err
			}
			now = time.Now()
			cur.Record(now.Sub(t0))
			if cfg.Trip != nil {
				cfg.Trip(now.Sub(t0))
			}
			n++
			if !now.Before(nextReport) {
				flush(now)
				nextReport = nextReport.Add(cfg.Interval)
				for !now.Before(nextReport) { // a stall longer than an interval
					nextReport = nextReport.Add(cfg.Interval)
				}
			}
		}
		return nil
	})
	if cur.Count() > 0 {
		flush(now)
	}
	res.Duration = result.Seconds(lastReport)
	return total, err
}
