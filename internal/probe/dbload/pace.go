package dbload

import (
	"sync"
	"time"
)

// pacer holds the sessions together to one log rate. All of them write
// to the server's one log, so they pace on its position: a session may
// insert while the log so far, with the payload already sent and not yet
// seen in the position, is behind rate × time. Other sessions' log on the
// server counts too: narrows adds only what is missing.
type pacer struct {
	mu      sync.Mutex
	rate    float64
	t0      time.Time // the run's start
	origin  time.Time // the pace's: the target is rate × (now − origin)
	based   bool
	base    int64 // the log position that counts as 0
	logged  int64 // log since base, as last read
	pending int64 // payload sent whose log the position has not shown yet
	// connected counts the sessions that have a connection; down is the
	// time none had, which is no part of the load's duration.
	connected int
	downSince time.Time
	down      time.Duration
	ended     time.Time
}

// behindMost is how far behind the pace may fall: a stall (a server
// slower than the rate for a while) is forgiven beyond one second of log
// rather than made up in a burst.
const behindMost = time.Second

func (p *pacer) start(t time.Time) {
	p.mu.Lock()
	p.t0, p.origin = t, t
	p.mu.Unlock()
}

// connect counts a session that has (again) a connection, at log position
// pos (-1 where the server does not tell it). The first sets the base;
// when every session was down, the base moves so that the log others
// wrote meanwhile is not counted as narrows'.
func (p *pacer) connect(now time.Time, pos int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wasDown := p.connected == 0
	p.connected++
	if wasDown && !p.downSince.IsZero() {
		p.down += now.Sub(p.downSince)
		p.downSince = time.Time{}
		// The pace resumes from here: the time without a connection is
		// not made up in a burst.
		p.origin = now.Add(-time.Duration(float64(p.logged+p.pending) / p.rate * float64(time.Second)))
	}
	switch {
	case pos < 0:
	case !p.based:
		p.base, p.based = pos, true
	case wasDown:
		p.base = pos - p.logged
	}
}

func (p *pacer) disconnect(now time.Time) {
	p.mu.Lock()
	if p.connected--; p.connected == 0 {
		p.downSince = now
	}
	p.mu.Unlock()
}

// take reserves n bytes of payload to send now and returns 0, or returns
// how long to wait before asking again.
func (p *pacer) take(now time.Time, n int64) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	have := float64(p.logged + p.pending)
	target := p.rate * now.Sub(p.origin).Seconds()
	if have < target {
		if behind := target - have; behind > p.rate*behindMost.Seconds() {
			p.origin = now.Add(-time.Duration((have/p.rate + behindMost.Seconds()) * float64(time.Second)))
		}
		p.pending += n
		return 0
	}
	wait := time.Duration((have - target) / p.rate * float64(time.Second))
	return min(max(wait, time.Millisecond), 50*time.Millisecond)
}

// release gives back a reservation whose INSERT failed.
func (p *pacer) release(n int64) {
	p.mu.Lock()
	p.pending -= n
	p.mu.Unlock()
}

// done settles a reservation: its INSERT committed and the log position
// reads pos (-1: the server does not tell it, and the payload counts).
func (p *pacer) done(n, pos int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending -= n
	switch {
	case pos < 0:
		p.logged += n
	case pos-p.base > p.logged:
		p.logged = pos - p.base
	}
}

// log is the log counted so far.
func (p *pacer) log() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logged
}

// since is the time since the run's start.
func (p *pacer) since() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(p.t0)
}

func (p *pacer) stop(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = now
	if p.connected == 0 && !p.downSince.IsZero() {
		p.down += now.Sub(p.downSince)
		p.downSince = time.Time{}
	}
}

// downBy is the time without a connection until now.
func (p *pacer) downBy(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.connected == 0 && !p.downSince.IsZero() {
		return p.down + now.Sub(p.downSince)
	}
	return p.down
}

// active is the time at least one session had a connection.
func (p *pacer) active() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended.Sub(p.t0) - p.down
}
