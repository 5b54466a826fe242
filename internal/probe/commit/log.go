package commit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/netio"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// Log is the agent's end of a commit test: its log file (none with
// AckReceive) and the loop that reads, writes, flushes and acknowledges.
type Log struct {
	spec   wire.TestSpec
	c      wire.CommitSpec
	t      *disk.Target
	blocks int64 // how many blocks the file holds
}

// OpenLog creates the log file in dir with probe/disk's rules (its own
// new file, the free-space checks), writing nothing yet (see Prepare);
// with AckReceive it creates nothing. Errors a person fixes are
// disk.UserErrors.
func OpenLog(spec wire.TestSpec, dir string) (*Log, error) {
	if err := CheckSpec(spec); err != nil {
		return nil, err
	}
	l := &Log{spec: spec, c: *spec.Commit}
	if l.c.Ack == result.AckReceive {
		return l, nil
	}
	var seed [8]byte
	rand.Read(seed[:])
	// Through the page cache, as a walreceiver or a relay log writes:
	// --ack write is then a copy into it, and the flush carries it to the
	// device.
	t, err := disk.Open(disk.Config{Dir: dir, Size: l.c.Size, Duration: spec.Duration, Interval: spec.Interval,
		Buffered: true, Engine: disk.EnginePortable, Seed: binary.LittleEndian.Uint64(seed[:])})
	if err != nil {
		return nil, err
	}
	l.t, l.blocks = t, t.Size()/spec.Block
	if l.blocks < int64(l.c.InFlight) {
		t.Close()
		return nil, fmt.Errorf("commit: a log file of %s holds fewer than %d blocks of %s", metric.FormatBytes(t.Size()), l.c.InFlight, metric.FormatBytes(spec.Block))
	}
	return l, nil
}

// Target is the log file (nil with AckReceive).
func (l *Log) Target() *disk.Target { return l.t }

// Prepare lays the file out in full and makes it durable, as a database
// preallocates a log segment: the measured writes then overwrite blocks
// the filesystem has already allocated.
func (l *Log) Prepare(ctx context.Context) error {
	if l.t == nil {
		return nil
	}
	return l.t.Layout(ctx)
}

// Close closes and removes the file; safe to call more than once.
func (l *Log) Close() error {
	if l.t == nil {
		return nil
	}
	return l.t.Close()
}

// Serve tells the client it is ready, then reads log blocks on sock
// and acknowledges each at the test's point, until the client closes its
// side (EOF after a whole block) or ctx ends. idle bounds every wait on
// the client. Its result is the agent's part: the blocks it acknowledged,
// its write and flush times, its flushes, its file.
func (l *Log) Serve(ctx context.Context, sock *netio.Socket, idle time.Duration) (*result.Commit, error) {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	res := &result.Commit{Config: result.CommitConfig{BlockBytes: l.spec.Block, InFlight: l.c.InFlight, Ack: l.c.Ack, Flush: l.c.Flush,
		Path: l.c.Path, Duration: result.Seconds(l.spec.Duration), Interval: result.Seconds(l.spec.Interval)}}
	if l.t != nil {
		res.Target = l.t.Summary()
	}
	ack := make([]byte, AckSize)
	if err := sock.Run(func(c netio.Conn) error { return netio.WriteAll(c, ack, &stop, idle) }); err != nil {
		return res, quiet(err)
	}
	var err error
	if l.t == nil {
		err = l.receive(sock, &stop, idle, res)
	} else {
		err = l.write(ctx, sock, &stop, idle, res)
	}
	res.Bytes = res.Commits * l.spec.Block
	return res, err
}

// quiet makes a stop asked for (ctx) a clean end.
func quiet(err error) error {
	if netio.ErrStopped(err) {
		return nil
	}
	return err
}

// receive acknowledges each block once read: one buffer, one goroutine.
func (l *Log) receive(sock *netio.Socket, stop *atomic.Bool, idle time.Duration, res *result.Commit) error {
	return sock.Run(func(c netio.Conn) error {
		buf, ack := make([]byte, l.spec.Block), make([]byte, AckSize)
		for {
			if err := netio.ReadFull(c, buf, stop, idle); err != nil {
				if err == io.EOF {
					return nil
				}
				return quiet(err)
			}
			res.Commits++
			binary.LittleEndian.PutUint64(ack, uint64(res.Commits))
			if err := netio.WriteAll(c, ack, stop, idle); err != nil {
				return quiet(err)
			}
		}
	})
}

// books are the agent's own figures while it writes: each batch's write
// and flush, and how many flushes.
type books struct {
	writes, flushes *metric.Histogram
	res             *result.Commit
}

// commitBatch writes blocks first..first+k-1 from the ring, makes them
// durable when the test asks, and counts them acknowledged.
func (l *Log) commitBatch(b *books, ring []byte, first, k int64) error {
	dsync := l.c.Ack == result.AckFlush && l.c.Flush == result.FlushDsync
	t0 := time.Now()
	calls, err := l.writeBlocks(ring, first, k, dsync)
	if err != nil {
		return err
	}
	t1 := time.Now()
	switch {
	case dsync: // each write returned durable: it was the flush
		b.flushes.Record(t1.Sub(t0))
		b.res.Flushes += calls
	case l.c.Ack == result.AckFlush:
		if err := l.t.Datasync(); err != nil {
			return err
		}
		b.writes.Record(t1.Sub(t0))
		b.flushes.Record(time.Since(t1))
		b.res.Flushes++
	default:
		b.writes.Record(t1.Sub(t0))
	}
	b.res.Commits = first + k
	return nil
}

// write reads, writes and acknowledges until the client's EOF. With one
// block in flight it is one goroutine, read, write, flush, acknowledge,
// as a replica serving one committing session has nothing to overlap.
// With more it is the walreceiver's loop: one goroutine reads blocks
// into a ring of InFlight blocks while another writes what has arrived,
// makes it durable in one flush (group flush: every block that came in
// while the last flush ran), and acknowledges it all with one count.
func (l *Log) write(ctx context.Context, sock *netio.Socket, stop *atomic.Bool, idle time.Duration, res *result.Commit) error {
	b := &books{writes: metric.NewHistogram(), flushes: metric.NewHistogram(), res: res}
	defer func() {
		if b.writes.Count() > 0 {
			w := result.LatenciesOf(b.writes)
			res.AgentWrite = &w
		}
		if b.flushes.Count() > 0 {
			f := result.LatenciesOf(b.flushes)
			res.AgentFlush = &f
		}
	}()
	n, block := int64(l.c.InFlight), l.spec.Block
	ring := make([]byte, n*block)
	ack := make([]byte, AckSize)
	sendAck := func(c netio.Conn) error {
		binary.LittleEndian.PutUint64(ack, uint64(res.Commits))
		return quiet(netio.WriteAll(c, ack, stop, idle))
	}
	if n == 1 {
		return sock.Run(func(c netio.Conn) error {
			for {
				if err := netio.ReadFull(c, ring, stop, idle); err != nil {
					if err == io.EOF {
						return nil
					}
					return quiet(err)
				}
				if err := l.commitBatch(b, ring, res.Commits, 1); err != nil {
					return err
				}
				if err := sendAck(c); err != nil {
					return err
				}
			}
		})
	}

	free := make(chan struct{}, n)
	for range n {
		free <- struct{}{}
	}
	arrived := make(chan struct{}, n)
	quit := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		defer close(arrived)
		readErr <- sock.Run(func(c netio.Conn) error {
			for i := int64(0); ; i++ {
				select {
				case <-free:
				case <-quit:
					return nil
				case <-ctx.Done():
					return nil
				}
				slot := i % n
				if err := netio.ReadFull(c, ring[slot*block:(slot+1)*block], stop, idle); err != nil {
					if err == io.EOF {
						return nil
					}
					return quiet(err)
				}
				arrived <- struct{}{}
			}
		})
	}()
	werr := sock.Run(func(c netio.Conn) error {
		for range arrived {
			k := int64(1)
			for more := len(arrived); more > 0; more-- {
				<-arrived
				k++
			}
			if err := l.commitBatch(b, ring, res.Commits, k); err != nil {
				return err
			}
			if err := sendAck(c); err != nil {
				return err
			}
			for range k {
				free <- struct{}{}
			}
		}
		return nil
	})
	close(quit)
	if werr != nil {
		stop.Store(true) // the reader may be waiting on the client
	}
	rerr := <-readErr
	for range arrived { // what the reader got after the writer stopped
	}
	return errors.Join(werr, rerr)
}

// writeBlocks writes blocks first..first+k-1 from the ring to the file,
// each contiguous run in one write (a log writer writes what it has in
// one call), and returns how many writes it took.
func (l *Log) writeBlocks(ring []byte, first, k int64, dsync bool) (int64, error) {
	n, block := int64(l.c.InFlight), l.spec.Block
	var calls int64
	for done := int64(0); done < k; {
		b := first + done
		slot, pos := b%n, b%l.blocks
		run := min(k-done, n-slot, l.blocks-pos)
		if err := l.t.WriteAt(ring[slot*block:(slot+run)*block], pos*block, dsync); err != nil {
			return calls, err
		}
		calls++
		done += run
	}
	return calls, nil
}
