package hostile

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// What a started test does, honest or not: its reports on the control
// connection and its data connections.

// run is one started test.
type run struct {
	a      *Agent
	c      net.Conn
	frames <-chan wire.Frame
	spec   wire.TestSpec
	roles  []string
	data   []net.Conn
	start  time.Time
	index  int
	counts []atomic.Int64 // per slot: bytes (sink, source) or round trips (echo, log)
	ended  sync.WaitGroup // the data connections' loops
}

func (r *run) send(t wire.Type, v any) bool {
	r.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return wire.WriteFrame(r.c, t, v) == nil
}

// flood sends next() every pace (0: as fast as the socket takes them)
// until the client goes, whatever it sends meanwhile.
func (r *run) flood(pace time.Duration, next func() wire.Interval) bool {
	var tick <-chan time.Time
	if pace > 0 {
		t := time.NewTicker(pace)
		defer t.Stop()
		tick = t.C
	}
	for {
		if pace > 0 {
			select {
			case _, ok := <-r.frames:
				if !ok {
					return false
				}
				continue
			case <-tick:
			}
		} else {
			select {
			case _, ok := <-r.frames:
				if !ok {
					return false
				}
				continue
			default:
			}
		}
		if !r.send(wire.TInterval, next()) {
			return false
		}
	}
}

// report is the next interval: the slots' counts, or a far test's record.
func (r *run) report() wire.Interval {
	iv := wire.Interval{Index: r.index, Elapsed: time.Duration(r.index+1) * r.spec.Interval, Slots: r.slots()}
	r.index++
	switch r.spec.Kind {
	case wire.KindDisk:
		rec := result.NewInterval("disk", iv.Elapsed-r.spec.Interval, iv.Elapsed)
		rec.Disk = &result.DiskInterval{Profile: r.a.s("custom"), Pattern: r.a.s("randread 8 KiB QD1"), IOs: 1000, Bytes: 8 << 20,
			IOPS: 1000 / r.spec.Interval.Seconds(), ByteRate: 8 << 20 / r.spec.Interval.Seconds(),
			Latency: latencies}
		iv.Record = &rec
	case wire.KindCPU, wire.KindCommit:
		iv.Stage = wire.StageRun
	}
	return iv
}

func (r *run) slots() []wire.SlotSample {
	s := make([]wire.SlotSample, len(r.roles))
	for i := range s {
		s[i] = wire.SlotSample{Slot: i, Bytes: r.counts[i].Load()}
	}
	return s
}

// serveData runs the data connections: as an agent does when honest,
// else reading and dropping whatever the client sends.
func (r *run) serveData(honest bool) {
	for i, c := range r.data {
		r.ended.Add(1)
		go func() {
			defer r.ended.Done()
			if !honest {
				io.Copy(io.Discard, c)
				return
			}
			r.serveSlot(c, r.roles[i], &r.counts[i])
		}()
	}
}

func (r *run) serveSlot(c net.Conn, role string, n *atomic.Int64) {
	switch role {
	case wire.SlotSink:
		buf := make([]byte, 128<<10)
		for {
			m, err := c.Read(buf)
			n.Add(int64(m))
			if err != nil {
				return
			}
		}
	case wire.SlotSource:
		block := make([]byte, 64<<10)
		for end := r.start.Add(r.spec.Duration); time.Now().Before(end); {
			if _, err := c.Write(block); err != nil {
				return
			}
			n.Add(int64(len(block)))
		}
		c.(*net.TCPConn).CloseWrite()
	case wire.SlotEcho:
		req, resp := make([]byte, r.spec.Request), make([]byte, r.spec.Response)
		for readFull(c, req) {
			if _, err := c.Write(resp); err != nil {
				return
			}
			n.Add(1)
		}
	case wire.SlotLog:
		ack := make([]byte, commit.AckSize) // all zeroes: ready
		block := make([]byte, r.spec.Block)
		if _, err := c.Write(ack); err != nil {
			return
		}
		for readFull(c, block) {
			binary.LittleEndian.PutUint64(ack, uint64(n.Add(1)))
			if _, err := c.Write(ack); err != nil {
				return
			}
		}
	}
}

// honest reports every interval until the test's end (its data
// connections' end, or its duration for a far test) or the client's
// Stop, then says Done; with NoDoneAfterStop, a Stop is followed by
// intervals forever instead.
func (r *run) honest() bool {
	r.serveData(true)
	ended := make(chan struct{})
	go func() { r.ended.Wait(); close(ended) }()
	dataEnded := (<-chan struct{})(ended)
	units := 1
	switch {
	case r.spec.Kind == wire.KindDisk && r.spec.Disk != nil:
		units = max(1, len(r.spec.Disk.Patterns))
	case r.spec.Kind == wire.KindCPU && r.spec.CPU != nil:
		units = max(1, 2*len(r.spec.CPU.Codecs))
	}
	end := time.After(time.Duration(units)*r.spec.Duration + 5*time.Second)
	if len(r.data) == 0 {
		end = time.After(time.Duration(units) * r.spec.Duration)
		dataEnded = nil
	}
	tick := time.NewTicker(r.spec.Interval)
	defer tick.Stop()
	stopped := false
	for {
		finished := false
		select {
		case <-tick.C:
			if !r.send(wire.TInterval, r.report()) {
				return false
			}
		case f, ok := <-r.frames:
			if !ok || f.Type != wire.TStop {
				return false
			}
			finished, stopped = !r.a.has(NoDoneAfterStop), true
		case <-dataEnded:
			finished = !stopped
		case <-end:
			finished = !stopped
		}
		if finished {
			return r.send(wire.TDone, r.done())
		}
	}
}

func (r *run) done() wire.Done {
	d := wire.Done{Slots: r.slots(), Elapsed: time.Since(r.start), CPU: time.Millisecond}
	for i := range d.Slots {
		d.Slots[i].Elapsed = d.Elapsed // every data connection has ended by now
	}
	if r.a.has(Escapes) {
		d.Reason = r.a.s("the agent's disk caught fire")
	}
	switch r.spec.Kind {
	case wire.KindDisk:
		d.Disk = r.a.target(r.spec)
		for _, p := range r.spec.Disk.Patterns {
			d.Disk.Patterns = append(d.Disk.Patterns, result.DiskPattern{Profile: r.a.s(p.Profile), Name: r.a.s(p.RW + " pattern"), RW: p.RW,
				BlockBytes: p.Block, QueueDepth: p.QD, Threads: p.Threads, Sync: p.Sync, Duration: result.Seconds(r.spec.Duration),
				IOs: 1000, Bytes: 1000 * p.Block, IOPS: 1000, Throughput: float64(1000 * p.Block),
				Latencies: latencies})
		}
	case wire.KindCPU:
		d.Compression = &result.Compression{Cores: 2, Codecs: []result.CodecResult{}, Sample: result.CompressionSample{Kind: result.SampleSynthetic, What: r.a.s("synthetic pages")}}
	case wire.KindCommit:
		d.Commit = &result.Commit{Commits: r.counts[0].Load(), Target: r.a.target(r.spec)}
	}
	return d
}

// latencies are a plausible disk's.
var latencies = result.Latencies{Min: us(50), Mean: us(100), P50: us(90), P90: us(150), P99: us(300), P999: us(500), Max: us(900)}

func us(n int) result.Seconds { return result.Seconds(time.Duration(n) * time.Microsecond) }

func readFull(c net.Conn, b []byte) bool {
	_, err := io.ReadFull(c, b)
	return err == nil
}
