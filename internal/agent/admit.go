package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/narrows/narrows/internal/wire"
)

// admission decides which accepted connections the agent keeps. Besides
// the total (MaxConns), it bounds connections that have not yet proved
// anything: half of MaxConns in all, so the other half is always there for
// authenticated clients and their data connections, and MaxUnauthPerHost
// from one source address, so one host cannot take the whole half. The
// Server's mutex guards it.
type admission struct {
	maxTotal, maxUnauth, maxPerHost int
	total, unauth                   int
	byHost                          map[netip.Addr]int
	// Failed proofs per address: past maxFailures within failWindow, the
	// address is refused until failWindow after its last failure, so a
	// secret cannot be guessed at the agent's full handshake rate.
	failures map[netip.Addr]*failures
}

type failures struct {
	n    int
	last time.Time
}

const (
	maxFailures = 10
	failWindow  = time.Minute
	// maxFailHosts bounds the addresses remembered: past it, those whose
	// window has passed are forgotten first.
	maxFailHosts = 4096
)

// connState is what the agent tracks per open connection.
type connState struct {
	host   netip.Addr
	authed bool // counted as authenticated: no longer against the unauthenticated bounds
}

func newAdmission(cfg Config) admission {
	return admission{maxTotal: cfg.MaxConns, maxUnauth: max(1, cfg.MaxConns/2), maxPerHost: cfg.MaxUnauthPerHost,
		byHost: make(map[netip.Addr]int), failures: make(map[netip.Addr]*failures)}
}

// take admits a new, unauthenticated connection from host, or says why
// not, as the error the refused client is told.
func (a *admission) take(host netip.Addr) (*connState, *wire.RemoteError) {
	if a.penalised(host, time.Now()) {
		return nil, &wire.RemoteError{Code: wire.CodeAuthLimit, RetryAfter: failWindow,
			Message: fmt.Sprintf("%d failed authentications from this address within %s: refused until %s after the last", maxFailures, failWindow, failWindow)}
	}
	busy := func(why string) *wire.RemoteError {
		return &wire.RemoteError{Code: wire.CodeBusy, RetryAfter: 5 * time.Second, Message: why}
	}
	switch {
	case a.total >= a.maxTotal:
		return nil, busy("too many open connections (its --max-conns)")
	case a.unauth >= a.maxUnauth:
		return nil, busy("too many connections not yet authenticated (half of its --max-conns)")
	case a.byHost[host] >= a.maxPerHost:
		return nil, busy("too many connections not yet authenticated from this address (its --max-unauth-per-host)")
	}
	a.total++
	a.unauth++
	a.byHost[host]++
	return &connState{host: host}, nil
}

// authenticated moves st out of the unauthenticated bounds.
func (a *admission) authenticated(st *connState) {
	if st == nil || st.authed {
		return
	}
	st.authed = true
	a.leaveUnauth(st.host)
}

// failed counts a failed proof from host.
func (a *admission) failed(host netip.Addr, now time.Time) {
	f := a.failures[host]
	if f == nil || now.Sub(f.last) >= failWindow {
		if len(a.failures) >= maxFailHosts {
			for h, old := range a.failures {
				if now.Sub(old.last) >= failWindow {
					delete(a.failures, h)
				}
			}
		}
		if len(a.failures) >= maxFailHosts {
			return // an address flood: the per-address bounds still hold
		}
		f = &failures{}
		a.failures[host] = f
	}
	f.n++
	f.last = now
}

// penalised says whether host has failed too often lately.
func (a *admission) penalised(host netip.Addr, now time.Time) bool {
	f := a.failures[host]
	if f == nil {
		return false
	}
	if now.Sub(f.last) >= failWindow {
		delete(a.failures, host)
		return false
	}
	return f.n >= maxFailures
}

// put frees st's place.
func (a *admission) put(st *connState) {
	a.total--
	if !st.authed {
		a.leaveUnauth(st.host)
	}
}

func (a *admission) leaveUnauth(host netip.Addr) {
	a.unauth--
	if a.byHost[host]--; a.byHost[host] <= 0 {
		delete(a.byHost, host)
	}
}

// hostOf is the source address of c, without its port.
func hostOf(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// quietLog logs what any stranger can make the agent say (refusals, bad
// handshakes, failed proofs) as a server should under a flood: the first
// few of each kind in a window, then only a count, summarised once the
// window ends with how many were left out and the address that sent most.
type quietLog struct {
	log    *slog.Logger
	window time.Duration
	burst  int

	mu     sync.Mutex
	events map[string]*tally
}

type tally struct {
	level   slog.Level
	start   time.Time
	logged  int
	dropped int
	hosts   map[netip.Addr]int
}

// maxTallyHosts bounds the addresses one tally remembers (an IPv6 flood
// can come from as many as it likes); the rest are counted but not named.
const maxTallyHosts = 1024

func newQuietLog(log *slog.Logger, window time.Duration, burst int) *quietLog {
	return &quietLog{log: log, window: window, burst: burst, events: make(map[string]*tally)}
}

// Log logs msg from host, or counts it when this window has had its burst.
func (q *quietLog) Log(level slog.Level, msg string, host netip.Addr, args ...any) {
	now := time.Now()
	q.mu.Lock()
	t := q.events[msg]
	if t != nil && now.Sub(t.start) >= q.window {
		q.summarise(msg, t, now)
		t = nil
	}
	if t == nil {
		t = &tally{level: level, start: now, hosts: make(map[netip.Addr]int)}
		q.events[msg] = t
	}
	emit := t.logged < q.burst
	if emit {
		t.logged++
	} else {
		t.dropped++
		if _, ok := t.hosts[host]; ok || len(t.hosts) < maxTallyHosts {
			t.hosts[host]++
		}
	}
	q.mu.Unlock()
	if emit {
		q.log.Log(context.Background(), level, msg, args...)
	}
}

// Flush summarises every window that has ended, or all of them when all is set.
func (q *quietLog) Flush(all bool) {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	for msg, t := range q.events {
		if all || now.Sub(t.start) >= q.window {
			q.summarise(msg, t, now)
		}
	}
}

// summarise logs what t left out and forgets it; q.mu is held.
func (q *quietLog) summarise(msg string, t *tally, now time.Time) {
	delete(q.events, msg)
	if t.dropped == 0 {
		return
	}
	var top netip.Addr
	for h, n := range t.hosts {
		if n > t.hosts[top] || !top.IsValid() {
			top = h
		}
	}
	q.log.Log(context.Background(), t.level, msg+" (repeated; not logged each time)", "not_logged", t.dropped,
		"over", now.Sub(t.start).Round(time.Second).String(), "sources", len(t.hosts), "top_source", top.String(), "top_source_count", t.hosts[top])
}
