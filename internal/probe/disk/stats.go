package disk

import (
	"sync"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// stats is what one worker measured in one interval (or, merged, a whole
// pattern). Histograms that do not apply to the pattern are nil.
type stats struct {
	lat          *metric.Histogram // every I/O; with a sync mode, a whole commit
	rd, wr       *metric.Histogram // a mix, by direction
	write, flush *metric.Histogram // fdatasync: the write and the flush apart

	ios, bytes       int64
	rdIOs, wrIOs     int64
	rdBytes, wrBytes int64
}

func newStats(p Pattern) *stats {
	s := &stats{lat: metric.NewHistogram()}
	if p.RW == Mix {
		s.rd, s.wr = metric.NewHistogram(), metric.NewHistogram()
	}
	if p.Sync == result.SyncFdatasync {
		s.write, s.flush = metric.NewHistogram(), metric.NewHistogram()
	}
	return s
}

// io records one read or write that took d.
func (s *stats) io(read bool, n int64, d time.Duration) {
	s.lat.Record(d)
	s.ios++
	s.bytes += n
	if s.rd == nil {
		return
	}
	if read {
		s.rd.Record(d)
		s.rdIOs++
		s.rdBytes += n
	} else {
		s.wr.Record(d)
		s.wrIOs++
		s.wrBytes += n
	}
}

// commit records a write of n bytes and its fdatasync: total is what the
// committing thread waited, write and flush each operation's own time.
func (s *stats) commit(n int64, total, write, flush time.Duration) {
	s.lat.Record(total)
	s.write.Record(write)
	s.flush.Record(flush)
	s.ios++
	s.bytes += n
}

func (s *stats) merge(o *stats) {
	s.lat.Merge(o.lat)
	for _, p := range [][2]*metric.Histogram{{s.rd, o.rd}, {s.wr, o.wr}, {s.write, o.write}, {s.flush, o.flush}} {
		if p[0] != nil {
			p[0].Merge(p[1])
		}
	}
	s.ios += o.ios
	s.bytes += o.bytes
	s.rdIOs += o.rdIOs
	s.wrIOs += o.wrIOs
	s.rdBytes += o.rdBytes
	s.wrBytes += o.wrBytes
}

func (s *stats) reset() {
	for _, h := range []*metric.Histogram{s.lat, s.rd, s.wr, s.write, s.flush} {
		if h != nil {
			h.Reset()
		}
	}
	s.ios, s.bytes, s.rdIOs, s.wrIOs, s.rdBytes, s.wrBytes = 0, 0, 0, 0, 0, 0
}

// meter is one worker's current interval, handed over to the reporter
// by swapping: the worker holds the lock once per batch of completions.
type meter struct {
	mu    sync.Mutex
	cur   *stats
	spare *stats
}

func newMeter(p Pattern) *meter { return &meter{cur: newStats(p), spare: newStats(p)} }

// take moves what the worker recorded since the last take into into.
func (m *meter) take(into *stats) {
	m.mu.Lock()
	m.cur, m.spare = m.spare, m.cur
	m.mu.Unlock()
	into.merge(m.spare)
	m.spare.reset()
}
