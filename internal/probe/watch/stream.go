package watch

import (
	"context"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/metric"
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
	// Beside, when set, runs alongside each stream for as long as it loads
	// the link, and returns the trimmed means of the responsiveness
	// draft's other two probe kinds: a fresh connection's handshake
	// (tcp_f) and a round trip on the loaded connection itself (http_l);
	// 0 for a kind not measured. internal/probe/loaded plugs in here;
	// without it the RPM stands on the separate round trips alone.
	Beside func(ctx context.Context, opts client.Options, load time.Duration) (handshake, self time.Duration)
}

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
			cfg := stream.Config{Direction: wireDirection[dir], Streams: 1, Duration: sc.Duration, Interval: sc.Duration, Block: sc.Block}
			var res *result.Stream
			var runErr error
			var handshake, self time.Duration
			loaded := w.Load(func() {
				var wg sync.WaitGroup
				if sc.Beside != nil {
					wg.Add(1)
					go func() {
						defer wg.Done()
						handshake, self = sc.Beside(ctx, w.cfg.Client, sc.Duration)
					}()
				}
				res, runErr = stream.Run(ctx, sess, cfg, func(result.Interval) {})
				wg.Wait()
			})
			if runErr != nil || ctx.Err() != nil {
				return runErr
			}
			s := result.WatchStream{Direction: dir, At: time.Now(), Throughput: res.Throughput, Loaded: int64(loaded.Count())}
			s.RPM = metric.Responsiveness(handshake, loaded.TrimmedMean(metric.TrimKeep), self)
			w.StreamDone(s)
		}
		return nil
	}}
}
