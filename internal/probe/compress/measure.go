package compress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// Config is what to measure.
type Config struct {
	Codecs []string // DefaultCodecs when empty (names from ParseCodecs)
	// Duration is measured for each codec and direction (DefaultDuration
	// when 0); compression always makes one whole pass over the sample,
	// for the ratio, however long that takes.
	Duration time.Duration
	// ChunkBytes is each write into a compressor and each read out of a
	// decompressor (DefaultChunk when 0).
	ChunkBytes int
	// Threads above 1 also runs that many threads at once, each with its
	// own compressor (at most GOMAXPROCS).
	Threads int
}

// Defaults.
const (
	DefaultDuration = time.Second
	// DefaultChunk is pgBackRest's buffer-size default: the buffer it
	// hands its compression filter at a time.
	DefaultChunk = 1 << 20
)

// Measure compresses and decompresses the sample with each codec, on one
// thread (the rate per core) and, with cfg.Threads, on several at once.
// It only computes: no file, no socket, nothing printed, so the agent can
// run it on a sample a client sent. Interrupted (ctx), it returns what was
// measured until then, marked Stopped, without an error.
func Measure(ctx context.Context, s Sample, cfg Config) (*result.Compression, error) {
	if len(s.Data) == 0 {
		return nil, probe.UserErrorf(nil, "the compression sample is empty")
	}
	if len(s.Data) > MaxSampleBytes {
		return nil, probe.UserErrorf(nil, "the compression sample is %s, more than the most narrows holds (%s)",
			metric.FormatBytes(int64(len(s.Data))), metric.FormatBytes(MaxSampleBytes))
	}
	if len(cfg.Codecs) == 0 {
		cfg.Codecs = DefaultCodecs
	}
	names, err := ParseCodecs(strings.Join(cfg.Codecs, ","))
	if err != nil {
		return nil, err
	}
	cfg.Codecs = names
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.ChunkBytes <= 0 {
		cfg.ChunkBytes = DefaultChunk
	}
	cfg.Threads = min(max(cfg.Threads, 1), runtime.GOMAXPROCS(0))

	about := s.About
	about.Bytes = int64(len(s.Data))
	if about.Kind == "" {
		about.Kind = result.SampleReceived
	}
	res := &result.Compression{Sample: about, Cores: runtime.NumCPU(), Codecs: []result.CodecResult{},
		Config: result.CompressionConfig{Codecs: cfg.Codecs, Duration: result.Seconds(cfg.Duration),
			ChunkBytes: int64(cfg.ChunkBytes), Threads: cfg.Threads}}
	if _, err := onThread(sysinfo.ThreadCPUTime); err != nil {
		res.CPUTimeUnavailable = "thread CPU time " + err.Error()
	}
	for _, name := range cfg.Codecs {
		if ctx.Err() != nil {
			res.Stopped = probe.Interrupted
			break
		}
		cr, err := measureCodec(ctx, codecs[name], s.Data, cfg)
		res.Codecs = append(res.Codecs, cr)
		if err != nil {
			res.Stopped = err.Error()
			return res, err
		}
		if cr.Stopped != "" {
			res.Stopped = cr.Stopped
			break
		}
	}
	return res, nil
}

// errStopped ends a loop that ctx interrupted.
var errStopped = errors.New(probe.Interrupted)

func measureCodec(ctx context.Context, c codec, data []byte, cfg Config) (result.CodecResult, error) {
	cr := result.CodecResult{Codec: c.name, Algorithm: c.algorithm, Level: c.level, Implementation: c.impl()}
	stopped := func(err error) (result.CodecResult, error) {
		if errors.Is(err, errStopped) {
			cr.Stopped = probe.Interrupted
			return cr, nil
		}
		err = fmt.Errorf("compress: %s: %w", c.name, err)
		cr.Stopped = err.Error()
		return cr, err
	}

	// One thread: the first pass keeps the stream, for the ratio and for
	// decompressing; further passes until Duration only count.
	stream := bytes.NewBuffer(make([]byte, 0, len(data)/2))
	comp, err := onThread(func() (loopStats, error) {
		return compressLoop(ctx, c, data, cfg.ChunkBytes, cfg.Duration, stream, nil)
	})
	if err != nil {
		return stopped(err)
	}
	cr.Compress = pass(comp)
	cr.CompressedBytes = int64(stream.Len())
	cr.Ratio = float64(len(data)) / float64(max(1, stream.Len()))
	if comp.stopped {
		cr.Stopped = probe.Interrupted
		return cr, nil
	}

	// The round trip, untimed: every byte back as it was. Then timed.
	if _, err := onThread(func() (loopStats, error) {
		return decompressLoop(ctx, c, stream.Bytes(), data, cfg.ChunkBytes, 0, nil)
	}); err != nil {
		return stopped(err)
	}
	dec, err := onThread(func() (loopStats, error) {
		return decompressLoop(ctx, c, stream.Bytes(), nil, cfg.ChunkBytes, cfg.Duration, nil)
	})
	if err != nil {
		return stopped(err)
	}
	// A decompression stopped before its first whole pass has a rate all
	// the same: the bytes it gave out over the time it took.
	cr.Decompress = pass(dec)
	if dec.stopped {
		cr.Stopped = probe.Interrupted
		return cr, nil
	}

	if cfg.Threads > 1 {
		par, err := parallel(ctx, c, data, stream.Bytes(), cfg)
		if err != nil {
			return stopped(err)
		}
		if par.Threads > 0 && cr.Compress.PerCore > 0 {
			par.Scaling = par.Compress / (float64(par.Threads) * cr.Compress.PerCore)
		}
		cr.Parallel = par
		if ctx.Err() != nil {
			cr.Stopped = probe.Interrupted
		}
	}
	return cr, nil
}

// loopStats is what one thread did.
type loopStats struct {
	bytes   int64 // uncompressed
	wall    time.Duration
	cpu     time.Duration
	cpuOK   bool
	stopped bool // ctx ended it
}

func pass(st loopStats) result.CodecPass {
	p := result.CodecPass{Bytes: st.bytes, Wall: result.Seconds(st.wall)}
	busy := st.wall
	if st.cpuOK && st.cpu > 0 {
		p.CPU = result.Seconds(st.cpu)
		p.CPUPercent = 100 * st.cpu.Seconds() / max(st.wall.Seconds(), 1e-9)
		busy = st.cpu
	}
	if busy > 0 {
		p.PerCore = float64(st.bytes) / busy.Seconds()
	}
	return p
}

// clock times a loop on its thread: wall time, and the thread's CPU time
// (the same thread throughout: the caller holds it).
type clock struct {
	t0    time.Time
	cpu0  time.Duration
	cpuOK bool
}

func startClock() clock {
	cpu0, err := sysinfo.ThreadCPUTime()
	return clock{t0: time.Now(), cpu0: cpu0, cpuOK: err == nil}
}

func (c clock) stop(st *loopStats) {
	st.wall = time.Since(c.t0)
	if c.cpuOK {
		if cpu1, err := sysinfo.ThreadCPUTime(); err == nil {
			st.cpu, st.cpuOK = cpu1-c.cpu0, true
		}
	}
}

// compressLoop streams the sample through one compressor, chunk by chunk,
// pass after pass, until d has passed (checked after each chunk, a cut
// pass closed so that all its input is compressed). With first, the first
// pass is always whole and its stream kept there; the others are counted
// and dropped. A backup process does the same on one core: one
// compression stream per file, fed a buffer at a time.
func compressLoop(ctx context.Context, c codec, data []byte, chunk int, d time.Duration, first *bytes.Buffer, halt *atomic.Bool) (loopStats, error) {
	var st loopStats
	var sink countWriter
	enc, err := c.newEncoder(&sink)
	if err != nil {
		return st, err
	}
	clk := startClock()
	deadline := clk.t0.Add(d)
	for p := 0; ; p++ {
		var w io.Writer = &sink
		whole := p == 0 && first != nil
		if whole {
			w = first
		}
		enc.Reset(w)
		cut := false
		for off := 0; off < len(data); off += chunk {
			end := min(off+chunk, len(data))
			if _, err := enc.Write(data[off:end]); err != nil {
				return st, err
			}
			st.bytes += int64(end - off)
			if ctx.Err() != nil {
				st.stopped, cut = true, true
				break
			}
			if !whole && (time.Now().After(deadline) || halt != nil && halt.Load()) {
				cut = true
				break
			}
		}
		if err := enc.Close(); err != nil {
			return st, err
		}
		if st.stopped && whole {
			return st, errStopped // no ratio without the whole sample
		}
		if cut || time.Now().After(deadline) || halt != nil && halt.Load() {
			break
		}
	}
	clk.stop(&st)
	return st, nil
}

// decompressLoop reads the stream through one decompressor, chunk by
// chunk, pass after pass, until d has passed (at least one chunk). With
// verify, it makes one pass and checks every byte against it; without,
// each whole pass must give out the sample's length (the cheap check).
func decompressLoop(ctx context.Context, c codec, stream, verify []byte, chunk int, d time.Duration, halt *atomic.Bool) (loopStats, error) {
	var st loopStats
	rd := bytes.NewReader(stream)
	dec, err := c.newDecoder(rd)
	if err != nil {
		return st, err
	}
	defer dec.Close()
	buf := make([]byte, chunk)
	want := int64(-1)
	if verify != nil {
		want = int64(len(verify))
	}
	clk := startClock()
	deadline := clk.t0.Add(d)
	for p := 0; ; p++ {
		if p > 0 {
			rd.Reset(stream)
			if err := dec.Reset(rd); err != nil {
				return st, err
			}
		}
		var got int64
		cut := false
		for {
			k, err := io.ReadFull(dec, buf)
			if verify != nil && k > 0 {
				if got+int64(k) > want || !bytes.Equal(buf[:k], verify[got:got+int64(k)]) {
					return st, fmt.Errorf("round trip: the decompressed bytes differ from the sample within bytes %d to %d", got, got+int64(k))
				}
			}
			got += int64(k)
			st.bytes += int64(k)
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return st, fmt.Errorf("decompress: %w", err)
			}
			if ctx.Err() != nil {
				if verify != nil {
					return st, errStopped
				}
				st.stopped, cut = true, true
				break
			}
			if verify == nil && (time.Now().After(deadline) || halt != nil && halt.Load()) {
				cut = true
				break
			}
		}
		if !cut {
			if want < 0 {
				want = got // the first whole pass sets the length the next must give
			}
			if got != want {
				return st, fmt.Errorf("round trip: decompressed %d bytes, the sample has %d", got, want)
			}
		}
		if verify != nil || cut || time.Now().After(deadline) || halt != nil && halt.Load() {
			break
		}
	}
	clk.stop(&st)
	return st, nil
}

// parallel runs cfg.Threads compressors at once over the sample, then as
// many decompressors over the stream, each on its own thread, for
// Duration each; the rates are all the threads' bytes over the wall time.
func parallel(ctx context.Context, c codec, data, stream []byte, cfg Config) (*result.CodecParallel, error) {
	par := &result.CodecParallel{Threads: cfg.Threads}
	run := func(loop func(halt *atomic.Bool) (loopStats, error)) (int64, time.Duration, error) {
		var halt atomic.Bool
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		stats := make([]loopStats, cfg.Threads)
		errs := make([]error, cfg.Threads)
		for i := range cfg.Threads {
			ready.Add(1)
			done.Go(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				ready.Done()
				<-start
				stats[i], errs[i] = loop(&halt)
				if errs[i] != nil {
					halt.Store(true)
				}
			})
		}
		ready.Wait()
		t0 := time.Now()
		close(start)
		done.Wait()
		wall := time.Since(t0)
		var n int64
		for i := range stats {
			n += stats[i].bytes
		}
		return n, wall, errors.Join(errs...)
	}
	n, wall, err := run(func(halt *atomic.Bool) (loopStats, error) {
		return compressLoop(ctx, c, data, cfg.ChunkBytes, cfg.Duration, nil, halt)
	})
	if err != nil {
		return nil, err
	}
	par.CompressBytes, par.CompressWall, par.Compress = n, result.Seconds(wall), rate(n, wall)
	if ctx.Err() != nil {
		return par, nil
	}
	n, wall, err = run(func(halt *atomic.Bool) (loopStats, error) {
		return decompressLoop(ctx, c, stream, nil, cfg.ChunkBytes, cfg.Duration, halt)
	})
	if err != nil {
		return nil, err
	}
	par.DecompressBytes, par.DecompressWall, par.Decompress = n, result.Seconds(wall), rate(n, wall)
	return par, nil
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// onThread runs f on a goroutine of its own that holds its OS thread
// throughout, so the thread's CPU time is f's alone.
func onThread[T any](f func() (T, error)) (T, error) {
	type out struct {
		v   T
		err error
	}
	ch := make(chan out, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		v, err := f()
		ch <- out{v, err}
	}()
	o := <-ch
	return o.v, o.err
}

// countWriter drops what is written and counts it: compressed output the
// run does not keep.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}
