package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// Run measures every pattern in turn, emitting interval records as they
// happen. On error or interruption the result holds what was measured
// until then, the pattern that was cut short marked Stopped.
func (t *Target) Run(ctx context.Context, emit probe.Emit) (*result.Disk, error) {
	res := t.Summary()
	for i, p := range t.cfg.Patterns {
		if ctx.Err() != nil {
			break
		}
		pr, err := t.runPattern(ctx, i, p, emit)
		res.Patterns = append(res.Patterns, pr)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// job is one pattern running.
type job struct {
	t        *Target
	p        Pattern
	deadline time.Time
	stop     atomic.Bool
}

// logWriter says whether p is the log as the database writes it here
// (logThroughCache): a log profile's write + fdatasync, one at a time,
// through the page cache, by a thread making plain pwrite and fdatasync
// calls, as PostgreSQL's WAL writer and pg_test_fsync do. O_DIRECT
// writes with io_uring's fsync (which the kernel hands to a worker
// thread, one more wake-up per commit) read 0.71-0.79 of pg_test_fsync's
// 8 KiB fdatasync rate on a quiet ext4, and 1.9x it under other writers'
// load: neither is what the database's commits wait. The file stays laid
// out (Layout), so each write overwrites allocated blocks, as a
// preallocated WAL segment is overwritten.
func (t *Target) logWriter(p Pattern) bool {
	return logThroughCache && t.cfg.Device == "" && p.Profile == result.ProfileLog && p.Sync == result.SyncFdatasync && p.QD == 1
}

func (t *Target) runPattern(ctx context.Context, idx int, p Pattern, emit probe.Emit) (result.DiskPattern, error) {
	engine, buffered := t.engine, !t.direct
	if t.logWriter(p) {
		engine = EnginePortable
		if t.direct {
			if err := disableDirect(t.f); err != nil {
				return result.DiskPattern{Profile: p.Profile, Name: p.Name()}, fmt.Errorf("disk: turning O_DIRECT off for the log pattern: %w", err)
			}
			buffered = true
			defer func() {
				enableDirect(t.f)
				dropCache(t.f) // the next pattern starts from the device
			}()
		}
	}
	if !t.direct {
		dropCache(t.f) // buffered: start from the device, as fio's invalidate
	}
	j := &job{t: t, p: p}
	var meters []*meter
	var workers []func() error
	for th := range p.Threads {
		offs := newOffsets(p, t.size, t.cfg.Seed, idx, th)
		// io_uring and iocp: one thread keeps its queue depth outstanding.
		switch engine {
		case EngineURing:
			m := newMeter(p)
			meters = append(meters, m)
			workers = append(workers, func() error { return j.uringWorker(m, offs, th) })
			continue
		case EngineIOCP:
			m := newMeter(p)
			meters = append(meters, m)
			workers = append(workers, func() error { return j.iocpWorker(m, offs, th) })
			continue
		}
		// The portable engine: one thread per outstanding I/O; a thread's
		// queue depth shares its offsets (one sequential stream stays one).
		shared := &sharedOffsets{o: offs}
		for q := range p.QD {
			m := newMeter(p)
			meters = append(meters, m)
			workers = append(workers, func() error { return j.portableWorker(m, shared, th*p.QD+q) })
		}
	}
	defer context.AfterFunc(ctx, func() { j.stop.Store(true) })()
	if engine == EngineURing {
		defer holdProcs(p.Threads)()
	}

	interval := t.cfg.Interval
	total, iv := newStats(p), newStats(p)
	cpu0, cpuErr := sysinfo.CPUTime()
	cpuLimit := sysinfo.CPULimitSince()
	start := clockNow()
	j.deadline = start.Add(t.cfg.Duration)
	done := make(chan error, len(workers))
	for _, w := range workers {
		go func() { done <- guard(w) }()
	}
	collect := func() {
		for _, m := range meters {
			m.take(iv)
		}
	}
	var last time.Duration
	report := func(now time.Time) {
		el := now.Sub(start)
		emit(j.interval(iv, last, el))
		total.merge(iv)
		iv.reset()
		last = el
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var firstErr error
	for pending := len(workers); pending > 0; {
		select {
		case err := <-done:
			pending--
			if err != nil && firstErr == nil {
				firstErr = err
				j.stop.Store(true)
			}
		case now := <-tick.C:
			// The last stretch, up to the end, is reported once the
			// workers are done rather than as a sliver after a tick.
			if now.Before(j.deadline.Add(-interval/10)) && !j.stop.Load() {
				collect()
				report(now)
			}
		}
	}
	end := clockNow()
	collect()
	if iv.ios > 0 {
		report(end)
	}
	pr := j.summary(total, end.Sub(start))
	pr.ThroughCache = buffered && t.direct
	if cpuErr == nil {
		if c1, err := sysinfo.CPUTime(); err == nil && end.After(start) {
			pr.CPU = 100 * float64(c1-cpu0) / float64(end.Sub(start))
		}
	} else {
		pr.CPUUnavailable = "CPU time " + cpuErr.Error()
	}
	pr.CPULimitCores, pr.CPUThrottledShare = cpuLimit()
	switch {
	case ctx.Err() != nil:
		pr.Stopped = probe.Interrupted
	case firstErr != nil:
		pr.Stopped = firstErr.Error()
	}
	return pr, firstErr
}

// guard turns a worker's panic into an error, so the run still ends
// through Close and removes its file.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("disk: worker failed: %v", r)
		}
	}()
	return f()
}

func (j *job) interval(s *stats, from, to time.Duration) result.Interval {
	iv := result.NewInterval("disk", from, to)
	d := &result.DiskInterval{Profile: j.p.Profile, Pattern: j.p.Name(), IOs: s.ios, Bytes: s.bytes, Latency: result.LatenciesOf(s.lat)}
	if secs := (to - from).Seconds(); secs > 0 {
		d.IOPS, d.ByteRate = float64(s.ios)/secs, float64(s.bytes)/secs
	}
	if s.flush != nil {
		f := result.LatenciesOf(s.flush)
		d.FlushLatency = &f
	}
	iv.Disk = d
	return iv
}

func (j *job) summary(s *stats, d time.Duration) result.DiskPattern {
	p := j.p
	pr := result.DiskPattern{Profile: p.Profile, Name: p.Name(), RW: string(p.RW), BlockBytes: p.Block, QueueDepth: p.QD,
		Threads: p.Threads, Sync: p.Sync, Duration: result.Seconds(d), IOs: s.ios, Bytes: s.bytes,
		Latencies: result.LatenciesOf(s.lat)}
	if j.t.cfg.Histograms {
		sp := s.lat.SparseAtMost(metric.SparseBudget / max(1, len(j.t.cfg.Patterns)))
		pr.Histogram = &sp
	}
	secs := d.Seconds()
	rate := func(n int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	pr.IOPS, pr.Throughput = rate(s.ios), rate(s.bytes)
	if p.RW == Mix {
		pr.ReadPercent = p.ReadPercent
		pr.Read = &result.DiskDirection{IOs: s.rdIOs, IOPS: rate(s.rdIOs), Throughput: rate(s.rdBytes), Latencies: result.LatenciesOf(s.rd)}
		pr.Write = &result.DiskDirection{IOs: s.wrIOs, IOPS: rate(s.wrIOs), Throughput: rate(s.wrBytes), Latencies: result.LatenciesOf(s.wr)}
	}
	if p.Sync != result.SyncNone {
		pr.Flushes, pr.FlushRate = s.ios, pr.IOPS
	}
	if s.write != nil {
		w, f := result.LatenciesOf(s.write), result.LatenciesOf(s.flush)
		pr.WriteLatency, pr.FlushLatency = &w, &f
	}
	return pr
}

// sharedOffsets lets a portable thread's queue depth draw from one
// generator.
type sharedOffsets struct {
	mu sync.Mutex
	o  *offsets
}

func (s *sharedOffsets) next() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.o.next()
}

// portableWorker is one thread with one I/O outstanding at a time,
// blocking in pread/pwrite as fio's psync engine does.
func (j *job) portableWorker(m *meter, offs *sharedOffsets, n int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	block := j.p.Block
	buf, err := allocAligned(int(block))
	if err != nil {
		return err
	}
	defer freeAligned(buf)
	fill(buf, j.t.cfg.Seed+uint64(n)+1)
	x, dsync, fdatasync := j.t.io, j.p.Sync == result.SyncDsync, j.p.Sync == result.SyncFdatasync
	for !j.stop.Load() {
		off, read := offs.next()
		var k int
		t0 := clockNow()
		if read {
			k, err = x.pread(buf, off)
		} else {
			k, err = x.pwrite(buf, off, dsync)
		}
		t1 := clockNow()
		if err == nil && k != len(buf) {
			err = shortIO(read)
		}
		if err != nil {
			return j.ioError(read, off, err)
		}
		if fdatasync {
			if err := x.datasync(); err != nil {
				return j.t.placeErr("flush ("+words.flush+") the test file", err)
			}
			t2 := clockNow()
			m.mu.Lock()
			m.cur.commit(block, t2.Sub(t0), t1.Sub(t0), t2.Sub(t1))
			m.mu.Unlock()
			t1 = t2
		} else {
			m.mu.Lock()
			m.cur.io(read, block, t1.Sub(t0))
			m.mu.Unlock()
		}
		if !t1.Before(j.deadline) {
			break
		}
	}
	return nil
}

func (j *job) ioError(read bool, off int64, err error) error {
	op := "write"
	if read {
		op = "read"
	}
	return j.t.placeErr(fmt.Sprintf("%s %s at offset %d", op, metric.FormatBytes(j.p.Block), off), err)
}

// shortIO is the error of a read or write that moved fewer bytes than
// asked, whichever engine issued it.
func shortIO(read bool) error {
	if read {
		return io.ErrUnexpectedEOF
	}
	return io.ErrShortWrite
}

// placeErr is an error of the measuring I/O, in the words of --device or
// --path (placeError: the ones a person fixes).
func (t *Target) placeErr(doing string, err error) error {
	if t.cfg.Device != "" {
		return fmt.Errorf("disk: %s on %s: %w", doing, t.cfg.Device, err)
	}
	// A write cut short by a filesystem that has just filled up (the
	// kernel returns the bytes it wrote, and ENOSPC only to the next
	// write) is no space too.
	if errors.Is(err, io.ErrShortWrite) {
		if fsi, serr := statFS(t.dir); serr == nil && fsi.total > 0 && fsi.avail < layoutChunk {
			return userErrorf(err, "--path %s: no space left on the device (a short write: the filesystem is full, %s free) trying to %s: free some space or use a smaller --size",
				t.cfg.Dir, metric.FormatBytes(fsi.avail), doing)
		}
	}
	return placeError(t.cfg.Dir, doing, err)
}

// procs counts the Ps that running patterns' rings hold. Each ring's
// thread keeps its P while it waits in the kernel (uring.Options.Raw), so
// GOMAXPROCS is kept at least two above all of them together, for
// everything else; several patterns may run at once in one process (an
// agent measuring two filesystems), so each adds its share and takes it
// back, and the last restores what was set before.
var procs struct {
	sync.Mutex
	held, base int
}

// holdProcs raises GOMAXPROCS for a pattern's ring threads until the
// function it returns is called.
func holdProcs(threads int) (release func()) {
	procs.Lock()
	defer procs.Unlock()
	if procs.held == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.held += threads
	if want := procs.held + 2; want > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(want)
	}
	return func() {
		procs.Lock()
		defer procs.Unlock()
		procs.held -= threads
		want := procs.base
		if procs.held > 0 {
			want = max(want, procs.held+2)
		}
		runtime.GOMAXPROCS(want)
	}
}
