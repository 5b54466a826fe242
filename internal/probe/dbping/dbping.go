// Package dbping is the database round-trip probe: ONE session through the
// engine's real driver, one query outstanding at a time, as a chatty
// application's session waits on each query. It times the full round
// trip of every query into an HDR histogram, times the phases of the
// connect, and bounds the network apart from the server (TCP handshakes
// to the same host:port below, a round trip that does no work above; or
// `net rr` through an agent beside the database) so the two can be set
// against each other. It never prints or advises, and sends nothing but
// the query it is given and those empty round trips (an empty query,
// COM_PING).
package dbping

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// Config is what to measure.
type Config struct {
	Query        string
	Display      string // the query as reports show it
	PayloadBytes int64
	Duration     time.Duration // ignored when Count > 0
	Count        int64
	Interval     time.Duration
	Queries      int64         // for the arithmetic
	Timeout      time.Duration // connect timeout, and how long one query may stall
	TCPProbes    int           // TCP handshakes to host:port for the network figure
	// Agent, if set, measures round trips through `narrows serve` beside
	// the database (cli wires it to the net rr probe).
	Agent func(ctx context.Context) (*result.RR, error)
	// AgentName is shown beside the agent's figures.
	AgentName string
}

// PayloadQuery is the classic string-literal test: SELECT '<n characters>'.
func PayloadQuery(n int64) string {
	b := make([]byte, 0, n+9)
	b = append(b, "SELECT '"...)
	for range n {
		b = append(b, 'x')
	}
	return string(append(b, '\''))
}

// Run measures. On error the result holds what was measured until then.
func Run(ctx context.Context, d *dbconn.DSN, cfg Config, emit probe.Emit) (*result.DBPing, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	res := &result.DBPing{Engine: string(d.Engine), Gaps: []result.Gap{},
		Config: result.DBPingConfig{Query: cfg.Display, PayloadBytes: cfg.PayloadBytes, Count: cfg.Count,
			Interval: result.Seconds(cfg.Interval), Queries: cfg.Queries}}
	if cfg.Count == 0 {
		res.Config.Duration = result.Seconds(cfg.Duration)
	}
	// Handshakes first: the login that follows resets MySQL's count of
	// connections closed before authenticating (max_connect_errors).
	var b bounds
	// A named instance's port comes from the SQL Browser, before the
	// probes that need it.
	if err := d.Resolve(ctx, cfg.Timeout); err != nil {
		return res, err
	}
	var err error
	if b.handshakes, err = tcpConnects(ctx, d.Addr(), cfg.TCPProbes, cfg.Timeout); err != nil {
		return res, dbconn.Classify(d, "connect", err)
	}
	if len(b.handshakes) > 0 && b.handshakes[0].rtt == 0 {
		b.local = localConnects(ctx, len(b.handshakes), cfg.Timeout)
	}
	conn, err := dbconn.Open(ctx, d, dbconn.Options{Timeout: cfg.Timeout, Blocking: true})
	if err != nil {
		return res, err
	}
	res.Connect = connectOf(conn.Phases)
	res.ServerVersion = conn.ServerVersion(ctx)
	if ctx.Err() != nil {
		conn.Close()
		res.Stopped = probe.Interrupted
		return res, nil
	}

	m := &meter{cfg: cfg, emit: emit, total: metric.NewHistogram(), cur: metric.NewHistogram(), empty: metric.NewHistogram()}
	loopErr := m.run(ctx, d, conn)
	if m.conn != nil {
		readKernelRTT(m.conn.NetConn(), res)
		m.conn.Close()
	}
	res.Gaps = m.gaps
	res.Queries = int64(m.total.Count())
	res.Duration = result.Seconds(m.measured)
	if res.Duration > 0 {
		res.Rate = float64(res.Queries) / m.measured.Seconds()
	}
	res.Latency = result.LatencyOf(m.total)
	if ctx.Err() != nil {
		res.Stopped = probe.Interrupted
	}
	b.empty, b.emptyFrom = m.empty, emptyFrom[d.Engine]
	res.Network = split(ctx, cfg, b, res)
	if loopErr != nil && ctx.Err() == nil {
		return res, loopErr
	}
	return res, nil
}

func connectOf(p dbconn.Phases) result.Connect {
	c := result.Connect{Setup: result.Seconds(p.Setup), TCP: result.Seconds(p.TCP), TLS: result.Seconds(p.TLS), Login: result.Seconds(p.Login),
		Total: result.Seconds(p.Total), TLSUsed: p.TLSUsed}
	for _, a := range p.Failed {
		c.FailedAttempts = append(c.FailedAttempts, result.ConnectAttempt{Outcome: a.Outcome, TCP: result.Seconds(a.TCP), Took: result.Seconds(a.Took)})
	}
	return c
}

// handshake is one TCP connect to the server's port.
type handshake struct {
	dial time.Duration // the connect call as the client sees it
	rtt  time.Duration // the kernel's SYN to SYN-ACK measurement (Linux); 0 if unknown
}

// tcpConnects times n TCP handshakes to addr, closing each at once. Each
// measured handshake comes right after an unmeasured one: on a VM whose
// idle CPUs halt, a handshake after 20 ms of quiet read 24–31 µs at the
// median on loopback (17–187 µs) against 10 µs for one right after
// another, the code path cold, not the network. The kernel's own RTT
// sample of the handshake is read where TCP_INFO exists: the connect call
// also holds the client's socket setup and wake-up, tens of microseconds
// that would pass for network on a fast LAN.
func tcpConnects(ctx context.Context, addr string, n int, timeout time.Duration) ([]handshake, error) {
	var out []handshake
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		h, err := warmDial(ctx, addr, timeout)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			break
		}
		out = append(out, h)
		time.Sleep(20 * time.Millisecond) // do not look like a connection storm
	}
	return out, nil
}

// warmDial connects to addr twice, one right after the other, and times
// the second.
func warmDial(ctx context.Context, addr string, timeout time.Duration) (handshake, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return handshake{}, err
	}
	c.Close()
	t0 := time.Now()
	c, err = d.DialContext(dctx, "tcp", addr)
	h := handshake{dial: time.Since(t0)}
	if err != nil {
		return handshake{}, err
	}
	defer c.Close()
	if ctl := controller(c); ctl != nil {
		if ti, err := sysinfo.ReadTCPInfo(ctl); err == nil {
			h.rtt = ti.RTT
		}
	}
	return h, nil
}

// localConnects times n connect calls to a listener of narrows' own on
// loopback, as tcpConnects does: what a connect call costs on this
// machine besides the path to the server.
func localConnects(ctx context.Context, n int, timeout time.Duration) []time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var out []time.Duration
	for range n {
		h, err := warmDial(ctx, ln.Addr().String(), timeout)
		if err != nil {
			break
		}
		out = append(out, h.dial)
	}
	return out
}

func controller(c net.Conn) sysinfo.Controller {
	if ctl, ok := c.(sysinfo.Controller); ok {
		return ctl
	}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			return rc
		}
	}
	return nil
}

func readKernelRTT(c net.Conn, res *result.DBPing) {
	ctl := controller(c)
	if ctl == nil {
		res.TCPUnavailable = "TCP_INFO not available for this connection"
		return
	}
	ti, err := sysinfo.ReadTCPInfo(ctl)
	if err != nil {
		res.TCPUnavailable = sysinfo.NoTCPInfo(err)
		return
	}
	res.KernelRTT, res.KernelMinRTT = result.Seconds(ti.RTT), result.Seconds(ti.MinRTT)
}

// bounds are what split works from besides the queries.
type bounds struct {
	handshakes []handshake
	local      []time.Duration // connect calls to narrows' own listener (without TCP_INFO)
	empty      *metric.Histogram
	emptyFrom  string
}

// split sets the network's round trip against the query's: between the
// bounds the handshakes and the empty round trips give, or as the agent
// measures it.
func split(ctx context.Context, cfg Config, b bounds, res *result.DBPing) *result.NetworkSplit {
	if res.Queries == 0 {
		return nil
	}
	ns := &result.NetworkSplit{Method: "bounds", QueryRTTP50: res.P50}
	var dials, rtts []time.Duration
	for _, h := range b.handshakes {
		dials = append(dials, h.dial)
		if h.rtt > 0 {
			rtts = append(rtts, h.rtt)
		}
	}
	if ns.TCPConnectSamples = len(dials); len(dials) > 0 {
		ns.TCPConnectP50, ns.TCPConnectMin = result.Seconds(median(dials)), result.Seconds(slices.Min(dials))
	}
	switch {
	case len(rtts) > 0:
		ns.HandshakeRTTP50 = result.Seconds(median(rtts))
		ns.NetworkLow, ns.LowFrom = ns.HandshakeRTTP50, "tcp_handshake_rtt"
	case len(b.local) > 0 && len(dials) > 0:
		ns.LocalConnectMin = result.Seconds(slices.Min(b.local))
		ns.NetworkLow, ns.LowFrom = max(ns.TCPConnectMin-ns.LocalConnectMin, 0), "tcp_connect_minus_local"
	default:
		ns.LowFrom = "none"
	}
	// The agent's round trips across the path, when it measures them.
	var rr *result.RR
	if cfg.Agent != nil && ctx.Err() == nil {
		ns.Agent = cfg.AgentName
		var err error
		if rr, err = cfg.Agent(ctx); err != nil {
			ns.AgentError = err.Error()
		}
		if rr != nil && rr.RoundTrips == 0 {
			rr = nil
		}
	}
	// A low bound above a round trip measured across the path is
	// contradicted by it, and bounds nothing here: the whole query's
	// (the connect calls cost this host more than a round trip: a filter
	// inspecting new connections, an emulator such as Wine), or the
	// agent's, made one after another as the queries are (spaced-out
	// handshakes each may wake an idle CPU: 15.0 µs against the agent's
	// 12.7 on a loopback).
	switch {
	case ns.NetworkLow > res.P50:
		ns.NetworkLow, ns.LowFrom = 0, "slower_than_query"
	case rr != nil && ns.NetworkLow > rr.P50:
		ns.NetworkLow, ns.LowFrom = 0, "slower_than_agent"
	}
	if b.empty != nil && b.empty.Count() > 0 {
		ns.EmptyRoundTrips, ns.EmptyRTTP50 = int64(b.empty.Count()), result.Seconds(b.empty.Quantile(0.5))
		ns.NetworkHigh, ns.HighFrom = ns.EmptyRTTP50, b.emptyFrom
	} else {
		// No round trip cheaper than the query itself: the network cannot
		// take longer than the fastest query did.
		ns.NetworkHigh, ns.HighFrom = res.Min, "fastest_query"
	}
	ns.NetworkHigh = max(min(ns.NetworkHigh, res.P50), ns.NetworkLow)
	ns.NetworkLow = min(ns.NetworkLow, ns.NetworkHigh)
	if res.P50 > 0 {
		ns.NetworkShareLow = float64(ns.NetworkLow) / float64(res.P50)
		ns.NetworkShareHigh = float64(ns.NetworkHigh) / float64(res.P50)
	}
	if rr != nil {
		ns.Method = "agent_rr"
		ns.AgentRTTP50, ns.AgentRTTs, ns.AgentRequest = rr.P50, rr.RoundTrips, rr.Config.RequestBytes
		// The path takes no longer than the database's own cheapest
		// round trip across it: an agent's round trip above that holds
		// its programs' slower wake-ups (seen on loopback: 102 µs
		// against COM_PING's 30), not more network.
		net := min(rr.P50, ns.NetworkHigh, res.P50)
		ns.AgentAboveHigh = rr.P50 > ns.NetworkHigh
		server := res.P50 - net
		share := float64(net) / float64(res.P50)
		serverShare := 1 - share
		ns.NetworkP50, ns.ServerP50, ns.NetworkShare, ns.ServerShare = &net, &server, &share, &serverShare
	}
	return ns
}

func median(v []time.Duration) time.Duration {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

// meter is the measuring loop's state.
type meter struct {
	cfg        Config
	emit       probe.Emit
	total, cur *metric.Histogram
	// empty holds the round trips that do no work on the server, sent
	// once the queries are done (see emptyRoundTrips).
	empty    *metric.Histogram
	gaps     []result.Gap
	measured time.Duration // time spent measuring, gaps excluded

	mu   sync.Mutex
	conn *dbconn.Conn

	start      time.Time
	lastReport time.Duration
	n          int64
}

func (m *meter) setConn(c *dbconn.Conn) {
	m.mu.Lock()
	m.conn = c
	m.mu.Unlock()
}

func (m *meter) abort() {
	m.mu.Lock()
	if m.conn != nil {
		m.conn.Abort()
	}
	m.mu.Unlock()
}

func (m *meter) flush(now time.Time) {
	el := now.Sub(m.start)
	iv := result.NewInterval(result.ProbeDBPing, m.lastReport, el)
	iv.Queries = int64(m.cur.Count())
	if span := el - m.lastReport; span > 0 {
		iv.QueryRate = float64(m.cur.Count()) / span.Seconds()
	}
	l := result.LatencyOf(m.cur)
	iv.RTT = &l
	m.emit(iv)
	m.total.Merge(m.cur)
	m.cur.Reset()
	m.lastReport = el
}

var errStalled = errors.New("the query did not answer in time")

// run measures until the duration or count is reached, reconnecting (and
// marking the gap) when the session is lost.
func (m *meter) run(ctx context.Context, d *dbconn.DSN, conn *dbconn.Conn) error {
	cfg := m.cfg
	var stop atomic.Bool
	var inflight atomic.Int64 // start of the query in progress, unix ns; 0 = none
	m.setConn(conn)
	defer context.AfterFunc(ctx, func() { stop.Store(true); m.abort() })()
	watchDone := make(chan struct{})
	defer close(watchDone)
	var stalled atomic.Bool
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-watchDone:
				return
			case now := <-t.C:
				if s := inflight.Load(); s != 0 && now.UnixNano()-s > int64(cfg.Timeout) {
					stalled.Store(true)
					m.abort()
				}
			}
		}
	}()

	m.start = time.Now()
	end := m.start.Add(cfg.Duration)
	done := func(now time.Time) bool {
		if stop.Load() {
			return true
		}
		if cfg.Count > 0 {
			return m.n >= cfg.Count
		}
		return !now.Before(end)
	}
	for {
		segStart := time.Now()
		now, err := m.segment(conn, cfg, &stop, &inflight, done)
		m.measured += now.Sub(segStart)
		if m.cur.Count() > 0 {
			m.flush(now)
		}
		if err == nil || stop.Load() || ctx.Err() != nil {
			return nil
		}
		if dbconn.ServerError(err) {
			// The server answered with an error: the query is wrong, or
			// the user may not run it. Reconnecting would not help.
			err = dbconn.Classify(d, "query", err)
			var e *dbconn.Error
			if errors.As(err, &e) && e.Kind == dbconn.Other {
				e.Kind = dbconn.BadQuery
			}
			return err
		}
		// The session is lost: mark the gap, reconnect with backoff.
		if stalled.Swap(false) {
			err = fmt.Errorf("%w (%s)", errStalled, cfg.Timeout)
		}
		gap := result.Gap{Of: "session", Start: result.Seconds(time.Since(m.start)), Reason: d.Reason(err)}
		giv := result.NewInterval(result.ProbeDBPing, m.lastReport, time.Since(m.start))
		giv.Gap = &gap
		m.emit(giv)
		conn.Close()
		m.setConn(nil)
		conn, gap.Retries, err = dbconn.Reopen(ctx, d, dbconn.Options{Timeout: cfg.Timeout, Blocking: true},
			250*time.Millisecond, 5*time.Second, func() bool { return done(time.Now()) })
		if err != nil {
			gap.Reason = d.Reason(err)
		}
		e := result.Seconds(time.Since(m.start))
		gap.End = &e
		m.gaps = append(m.gaps, gap)
		m.lastReport = time.Since(m.start)
		if conn == nil {
			if ctx.Err() != nil || stop.Load() {
				return nil
			}
			return fmt.Errorf("db ping: lost the session and could not reconnect: %s", gap.Reason)
		}
		m.setConn(conn)
		giv = result.NewInterval(result.ProbeDBPing, e.D(), e.D())
		giv.Gap = &gap
		m.emit(giv)
	}
}

// segment runs queries on one session until done or an error.
func (m *meter) segment(conn *dbconn.Conn, cfg Config, stop *atomic.Bool, inflight *atomic.Int64,
	done func(time.Time) bool) (time.Time, error) {
	now := time.Now()
	nextReport := m.start.Add(m.lastReport + cfg.Interval)
	body := func(query, empty func() error) error {
		for !done(now) {
			t0 := time.Now()
			inflight.Store(t0.UnixNano())
			err := query()
			now = time.Now()
			inflight.Store(0)
			if err != nil {
				if stop.Load() {
					return nil
				}
				return err
			}
			m.cur.Record(now.Sub(t0))
			m.n++
			if !now.Before(nextReport) {
				m.flush(now)
				nextReport = nextReport.Add(cfg.Interval)
				for !now.Before(nextReport) {
					nextReport = nextReport.Add(cfg.Interval)
				}
			}
		}
		if empty != nil && !stop.Load() {
			m.emptyRoundTrips(empty, now.Sub(m.start), inflight)
		}
		return nil
	}
	err := withQuery(conn, cfg.Query, body)
	return now, err
}

// emptyRoundTrips sends round trips that do no work on the server, one
// after another, right after the queries (the same session, as warm):
// for a twentieth of the run, between 100 and 500 ms, and at least
// minEmpty of them (a median of 4, all a 30 ms line allows in 100 ms, is
// one sample's word), unless that takes past maxEmptyTime; at most 2,000.
// Their p50 is the most the network can take of a round trip.
func (m *meter) emptyRoundTrips(empty func() error, ran time.Duration, inflight *atomic.Int64) {
	start := time.Now()
	end := start.Add(min(max(ran/20, 100*time.Millisecond), 500*time.Millisecond))
	for i := 0; i < 2000; i++ {
		now := time.Now()
		if !now.Before(end) && (i >= minEmpty || now.Sub(start) >= maxEmptyTime) {
			break
		}
		t0 := time.Now()
		inflight.Store(t0.UnixNano())
		err := empty()
		inflight.Store(0)
		if err != nil {
			return
		}
		m.empty.Record(time.Since(t0))
	}
}

// minEmpty and maxEmptyTime bound the empty round trips by count and
// time: 30 take 0.9 s across 30 ms, 3 s across 100 ms.
const (
	minEmpty     = 30
	maxEmptyTime = 3 * time.Second
)

// emptyFrom names each engine's round trip that does no work.
var emptyFrom = map[dbconn.Engine]string{dbconn.Postgres: "empty_query", dbconn.MySQL: "com_ping"}

// withQuery runs body with a function that sends the query once and reads
// its whole answer, the engine's fastest honest way: one simple-protocol
// message for PostgreSQL (as pgbench -M simple), one COM_QUERY for MySQL,
// one SQL batch for SQL Server; and one that makes a round trip doing no
// work: an empty query (PostgreSQL answers EmptyQueryResponse), COM_PING
// (MySQL); nil for SQL Server, which has none. No context per query: the
// watchdog in run aborts a stalled or interrupted query through the
// socket instead.
func withQuery(conn *dbconn.Conn, q string, body func(query, empty func() error) error) error {
	bg := context.Background()
	switch conn.DSN.Engine {
	case dbconn.Postgres:
		return conn.Conn.Raw(func(dc any) error {
			sc, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("db ping: unexpected driver connection %T", dc)
			}
			pc := sc.Conn().PgConn()
			send := func(q string) error {
				mrr := pc.Exec(bg, q)
				for mrr.NextResult() {
					rr := mrr.ResultReader()
					for rr.NextRow() {
					}
					rr.Close()
				}
				return mrr.Close()
			}
			return body(func() error { return send(q) }, func() error { return send("") })
		})
	case dbconn.MySQL:
		return conn.Conn.Raw(func(dc any) error {
			qc, ok := dc.(driver.QueryerContext)
			if !ok {
				return fmt.Errorf("db ping: unexpected driver connection %T", dc)
			}
			var ping func() error
			if p, ok := dc.(driver.Pinger); ok {
				ping = func() error { return p.Ping(bg) }
			}
			var dest []driver.Value
			return body(func() error {
				rows, err := qc.QueryContext(bg, q, nil)
				if err != nil {
					return err
				}
				n := len(rows.Columns())
				if cap(dest) < n {
					dest = make([]driver.Value, n)
				}
				var err2 error
				for err2 == nil {
					err2 = rows.Next(dest[:n])
				}
				if err2 != io.EOF {
					rows.Close()
					return err2
				}
				return rows.Close()
			}, ping)
		})
	default:
		return body(func() error {
			rows, err := conn.Conn.QueryContext(bg, q)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			if err := rows.Err(); err != nil {
				rows.Close()
				return err
			}
			return rows.Close()
		}, nil)
	}
}
