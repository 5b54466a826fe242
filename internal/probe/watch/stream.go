package watch

import (
	"context"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/pmtu"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// StreamConfig is the short stream a watch runs now and then.
type StreamConfig struct {
	Every      time.Duration
	Duration   time.Duration // of each direction's stream
	Directions []string      // result.DirUp, result.DirDown: one after the other
	Block      int64         // bytes per write (default 128 KiB, as net stream)
}

// selfEvery is how often a short stream's sender's TCP state is read: its
// smoothed RTT is the responsiveness draft's round trip on the loaded
// connection itself, as net rr --under-load takes it.
const selfEvery = 100 * time.Millisecond

var wireDirection = map[string]string{result.DirUp: wire.Forward, result.DirDown: wire.Reverse}

// StreamStep is the short stream as a Step: each direction in turn on a
// session of its own, its throughput, and the responsiveness of the round
// trips the watch made while it ran (metric.Responsiveness).
func StreamStep(sc StreamConfig) Step {
	if sc.Block == 0 {
		sc.Block = 128 << 10
	}
	return Step{Name: result.WatchErrStream, Every: sc.Every, Run: func(ctx context.Context, w *Watcher) error {
		sess, err := w.Dial(ctx)
		if err != nil {
			return err
		}
		defer sess.Close()
		for _, dir := range sc.Directions {
			cfg := stream.Config{Direction: wireDirection[dir], Streams: 1, Duration: sc.Duration, Interval: min(selfEvery, sc.Duration), Block: sc.Block}
			var res *result.Stream
			var runErr error
			self := metric.NewHistogram()
			loaded := w.Load(func() {
				res, runErr = stream.Run(ctx, sess, cfg, func(iv result.Interval) {
					if iv.TCP != nil && iv.TCP.RTT > 0 {
						self.Record(iv.TCP.RTT.D())
					}
				})
			})
			if runErr != nil || ctx.Err() != nil {
				return runErr
			}
			s := result.WatchStream{Direction: dir, At: time.Now(), Throughput: res.Throughput, Loaded: int64(loaded.Count()),
				Self: result.Seconds(self.TrimmedMean(metric.TrimKeep))}
			// No fresh handshake is timed: the formula stands on the two
			// kinds of round trip.
			s.RPM = metric.Responsiveness(0, loaded.TrimmedMean(metric.TrimKeep), s.Self.D())
			w.StreamDone(s)
		}
		return nil
	}}
}

// MTUStep is a path-MTU check (narrows net mtu) as a Step: both directions
// on a session of its own; the smaller path MTU found is the watch's (a
// black hole whose size was not found counts as 0, and the metric goes).
func MTUStep(every time.Duration) Step {
	return Step{Name: result.WatchErrMTU, Every: every, Run: func(ctx context.Context, w *Watcher) error {
		sess, err := w.Dial(ctx)
		if err != nil {
			return err
		}
		defer sess.Close()
		m, err := pmtu.Run(ctx, sess, pmtu.Config{})
		if err != nil {
			return err
		}
		least := 0
		for i, d := range m.Directions {
			if i == 0 || d.PathMTU < least {
				least = d.PathMTU
			}
		}
		w.SetPathMTU(least)
		return nil
	}}
}
