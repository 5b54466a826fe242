// Package loaded is `narrows net rr --under-load`: what a backup or a
// replica's catch-up does to everyone else's round trips. Round trips on
// a connection of their own, first with nothing else running, then while
// streams on a second session fill the path (after a warm-up, so that the
// queue they build is there); and, on the loaded connections themselves,
// the senders' kernel round-trip time, which is what a replication
// stream's own acknowledgements wait. From them, responsiveness in round
// trips per minute as the IETF draft "Responsiveness under Working
// Conditions" defines it (metric.Responsiveness).
package loaded

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/rr"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// Config is what to measure.
type Config struct {
	Streams   int
	Direction string // result.DirUp, result.DirDown or result.DirBoth
	// Idle and Loaded are how long each phase's round trips run; Warmup
	// how long the load runs before the loaded round trips begin.
	Idle, Warmup, Loaded time.Duration
	Interval             time.Duration
	Request, Response    int64
	Queries              int64
	Block                int64 // the load's writes (default 128 KiB, as net stream)
}

// Phase names, in the interval records' phase field.
const (
	PhaseIdle   = "idle"
	PhaseLoaded = "loaded"
)

// LoadTail is how much longer the load runs than the loaded round trips
// (after its warm-up).
const LoadTail = 500 * time.Millisecond

// selfEvery is how often the load's senders' TCP state is sampled.
const selfEvery = 100 * time.Millisecond

var wireDirection = map[string]string{result.DirUp: wire.Forward, result.DirDown: wire.Reverse, result.DirBoth: wire.Bidir}

// Run measures on s, and opens a second session with opts for the load.
// On error the result holds what was measured until then.
func Run(ctx context.Context, s *client.Session, opts client.Options, cfg Config, emit probe.Emit) (*result.Loaded, error) {
	if cfg.Block == 0 {
		cfg.Block = 128 << 10
	}
	res := &result.Loaded{Config: result.LoadedConfig{Streams: cfg.Streams, Direction: cfg.Direction, RequestBytes: cfg.Request,
		ResponseBytes: cfg.Response, Idle: result.Seconds(cfg.Idle), Warmup: result.Seconds(cfg.Warmup), Loaded: result.Seconds(cfg.Loaded), Queries: cfg.Queries}}
	tag := func(phase string) probe.Emit {
		return func(iv result.Interval) { iv.Phase = phase; emit(iv) }
	}
	round := func(d time.Duration, h *metric.Histogram, phase string) (*result.RR, error) {
		return rr.Run(ctx, s, rr.Config{Request: cfg.Request, Response: cfg.Response, Duration: d, Interval: cfg.Interval,
			Queries: cfg.Queries, Trip: h.Record}, tag(phase))
	}
	idle := metric.NewHistogram()
	// How much of each phase a CPU limit (a container's) held this end
	// off the CPU: a round trip due then waits it out.
	cpuLimit := sysinfo.CPULimitSince()
	ri, err := round(cfg.Idle, idle, PhaseIdle)
	res.CPULimitCores, res.IdleThrottledShare = cpuLimit()
	res.Idle = phase(idle)
	if err != nil || ctx.Err() != nil {
		return res, err
	}
	res.IdleResponsiveness = metric.Responsiveness(ri.Connect.D(), idle.TrimmedMean(metric.TrimKeep), ri.KernelRTT.D())

	s2, err := client.Dial(ctx, opts)
	if err != nil {
		return res, fmt.Errorf("under load: the load's session: %w", err)
	}
	defer s2.Close()
	// The load outlasts the loaded round trips a little: their test's
	// set-up and its last report must not see the path go quiet.
	loadFor := cfg.Warmup + cfg.Loaded + LoadTail
	var mu sync.Mutex
	self := metric.NewHistogram()
	var bytes, retr int64
	var from, to time.Duration = -1, 0
	warm := cfg.Warmup.Seconds()
	onLoad := func(iv result.Interval) {
		if iv.Start.D().Seconds() < warm {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		bytes += iv.Bytes
		if iv.TCP != nil {
			retr += iv.TCP.Retransmits
			if iv.TCP.RTT > 0 {
				self.Record(iv.TCP.RTT.D())
			}
		}
		if from < 0 || iv.Start.D() < from {
			from = iv.Start.D()
		}
		to = max(to, iv.End.D())
	}
	var sres *result.Stream
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		sres, serr = stream.Run(ctx, s2, stream.Config{Direction: wireDirection[cfg.Direction], Streams: cfg.Streams, ParallelOnly: true,
			Duration: loadFor, Interval: selfEvery, Block: cfg.Block}, onLoad)
	}()
	loaded := metric.NewHistogram()
	var rl *result.RR
	select {
	case <-done: // the load failed before its warm-up ended
	case <-time.After(cfg.Warmup):
		cpuLimit := sysinfo.CPULimitSince()
		rl, err = round(cfg.Loaded, loaded, PhaseLoaded)
		res.CPULimitCores, res.LoadedThrottledShare = cpuLimit()
	case <-ctx.Done():
	}
	<-done
	res.Loaded = phase(loaded)
	mu.Lock()
	if to > from && from >= 0 {
		res.Throughput = float64(bytes) * 8 / (to - from).Seconds()
	}
	res.Retransmits = retr
	res.Self, res.SelfSamples = result.Seconds(self.TrimmedMean(metric.TrimKeep)), int(self.Count())
	mu.Unlock()
	if rl != nil {
		res.Handshake = rl.Connect
	}
	if res.Idle.RoundTrips > 0 && res.Loaded.RoundTrips > 0 {
		res.Rise = res.Loaded.P50 - res.Idle.P50
		res.Responsiveness = metric.Responsiveness(res.Handshake.D(), loaded.TrimmedMean(metric.TrimKeep), res.Self.D())
	}
	if ctx.Err() != nil {
		res.Stopped = probe.Interrupted
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if serr != nil {
		return res, fmt.Errorf("under load: the load: %w", serr)
	}
	if sres == nil || rl == nil {
		return res, fmt.Errorf("under load: the load ended before its warm-up did")
	}
	return res, nil
}

func phase(h *metric.Histogram) result.LoadedPhase {
	return result.LoadedPhase{RoundTrips: int64(h.Count()), Latency: result.LatencyOf(h), Trimmed: result.Seconds(h.TrimmedMean(metric.TrimKeep))}
}
