// Package replication is the replication watcher behind `narrows db repl`:
// every interval it reads, with SELECT and SHOW only, where the primary's
// log is and how far each replica has taken it (PostgreSQL:
// pg_stat_replication and pg_current_wal_lsn(); MySQL/MariaDB: the source's
// binary log position and each replica's SHOW REPLICA STATUS; SQL Server:
// sys.dm_hadr_database_replica_states and sys.dm_os_performance_counters),
// turns positions into bytes waiting at each stage and rates from one poll
// to the next, and remembers replicas that fall silent. A lost connection
// is retried with backoff and recorded as a gap: no figure is carried over
// it. It never prints and never judges: the advisor does that.
package replication

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
)

// Replica is a replica named on the command line (--replica-dsn).
type Replica struct {
	Name  string // given as NAME=DSN, or derived
	Named bool   // the user gave the name
	DSN   *dbconn.DSN
}

// Config is what to watch.
type Config struct {
	Interval    time.Duration
	Duration    time.Duration // 0: until interrupted
	Replicas    []Replica
	SilentAfter time.Duration // a replica not heard from for this long is silent
	Timeout     time.Duration // connect and per-poll limit
}

// snapshot is what one poll read, before any arithmetic.
type snapshot struct {
	at          time.Time // client clock, after the poll
	serverNow   time.Time // the primary's clock, when it tells it
	logPosition string
	logBytes    *int64
	replicas    []raw
}

// raw is one replica as read, in absolute positions where the engine gives
// positions, or in queue sizes where it gives queues (SQL Server).
type raw struct {
	name, database                string
	engineState, syncState        string
	present                       bool // seen by the primary (or its replica connection) in this poll
	silent                        bool // the engine itself says the replica is not connected
	stopped                       bool // MySQL: a replication thread is off
	sent, write, flush, replay    *int64
	unsent, unreplayed            *int64
	sendRate, replayRate          *float64
	generation                    *float64
	writeLag, flushLag, replayLag *time.Duration
	replyTime                     time.Time
	replyAge                      *time.Duration
	secondsBehind                 *time.Duration
	sbmNull                       bool
	io, sqlThread, lastErr        string
	secondaryLag                  *time.Duration
	replayPaused                  *bool
	positions                     map[string]string
	gap                           *result.Gap
}

// watcher is one engine's queries.
type watcher interface {
	// check fails with a dbconn.Error when the server is not a primary or
	// the user lacks what the watcher reads.
	check(ctx context.Context, primary *sql.Conn) error
	// checkReplica does the same for a replica's own connection.
	checkReplica(ctx context.Context, r *replicaConn) error
	poll(ctx context.Context, primary *sql.Conn, replicas []*replicaConn) (*snapshot, error)
	queriesPerPoll(replicas int) int
}

// outage is a lost connection (the primary's, or a replica's own) while
// it lasts: its open gap, and when to try to reconnect.
type outage struct {
	gap      *result.Gap // nil while connected
	attempts int         // reconnects failed so far
	retryAt  time.Time
}

// lose opens a gap of the connection named of, at start into the run.
func (o *outage) lose(of string, start time.Duration, reason string) {
	*o = outage{gap: &result.Gap{Of: of, Start: result.Seconds(start), Reason: reason}, retryAt: time.Now().Add(reconnectAfter(0))}
}

// due says whether a reconnect should be tried now.
func (o *outage) due(now time.Time) bool { return o.gap != nil && !now.Before(o.retryAt) }

// retryFailed records a failed reconnect and backs off further.
func (o *outage) retryFailed(reason string) {
	o.attempts++
	o.gap.Reason = reason
	o.retryAt = time.Now().Add(reconnectAfter(o.attempts))
}

// end closes the gap at end into the run and returns it.
func (o *outage) end(end time.Duration) result.Gap {
	e := result.Seconds(end)
	g := *o.gap
	g.End, g.Retries = &e, o.attempts
	*o = outage{}
	return g
}

// gapCopy is the open gap as a record shows it.
func (o *outage) gapCopy() *result.Gap {
	if o.gap == nil {
		return nil
	}
	g := *o.gap
	return &g
}

type replicaConn struct {
	Replica
	conn *dbconn.Conn
	outage
	// name the primary knows this replica by (PostgreSQL application_name).
	known string
	// statusQuery is the spelling this replica understands (MySQL).
	statusQuery string
	start       time.Time // of the run, for gap times
}

// fail records that the replica's own connection is lost.
func (rc *replicaConn) fail(err error) {
	if rc.conn != nil {
		rc.conn.Close()
		rc.conn = nil
	}
	rc.lose(rc.Name, time.Since(rc.start), rc.DSN.Reason(err))
}

func newWatcher(e dbconn.Engine) watcher {
	switch e {
	case dbconn.Postgres:
		return &pgWatcher{}
	case dbconn.MySQL:
		return &myWatcher{}
	default:
		return &msWatcher{prev: map[string]counterSample{}}
	}
}

// reconnectAfter is the wait before reconnect attempt n.
func reconnectAfter(n int) time.Duration {
	return dbconn.Backoff(n, 500*time.Millisecond, 10*time.Second)
}

// Run watches until ctx is done or the duration is over, emitting one
// interval record per poll. It returns an error before the first poll when
// the primary or a replica cannot be used (a dbconn.Error a person can fix).
func Run(ctx context.Context, primary *dbconn.DSN, cfg Config, emit probe.Emit) (*result.Repl, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.SilentAfter <= 0 {
		cfg.SilentAfter = 15 * time.Second
	}
	res := &result.Repl{Engine: string(primary.Engine), Gaps: []result.Gap{},
		Config: result.ReplConfig{Interval: result.Seconds(cfg.Interval), Duration: result.Seconds(cfg.Duration),
			SilentAfter: result.Seconds(cfg.SilentAfter), Replicas: []string{}}}
	for _, r := range cfg.Replicas {
		res.Config.Replicas = append(res.Config.Replicas, r.Name)
	}
	if primary.Engine == dbconn.MySQL && len(cfg.Replicas) == 0 {
		return res, &dbconn.Error{Kind: dbconn.BadDSN, Msg: "db repl: MySQL/MariaDB: name each replica with --replica-dsn mysql://USER:PASSWORD@REPLICA:3306/ — a source does not know how far its replicas have read"}
	}
	if primary.Engine == dbconn.SQLServer && len(cfg.Replicas) > 0 {
		return res, &dbconn.Error{Kind: dbconn.BadDSN, Msg: "db repl: SQL Server: leave out --replica-dsn — the primary's sys.dm_hadr_database_replica_states already has every secondary"}
	}
	w := newWatcher(primary.Engine)
	res.QueriesPerPoll = w.queriesPerPoll(len(cfg.Replicas))
	conn, err := dbconn.Open(ctx, primary, dbconn.Options{Timeout: cfg.Timeout})
	if err != nil {
		return res, err
	}
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	err = w.check(cctx, conn.Conn)
	cancel()
	if err != nil {
		return res, fmt.Errorf("primary %s: %w", primary.Redacted, dbconn.Classify(primary, "check", err))
	}
	var reps []*replicaConn
	defer func() {
		for _, r := range reps {
			if r.conn != nil {
				r.conn.Close()
			}
		}
	}()
	for _, r := range cfg.Replicas {
		rc := &replicaConn{Replica: r}
		reps = append(reps, rc)
		c, err := dbconn.Open(ctx, r.DSN, dbconn.Options{Timeout: cfg.Timeout})
		if err != nil {
			if dbconn.UserFixable(err) && !dbconn.Is(err, dbconn.Unreachable) {
				return res, fmt.Errorf("replica %s: %w", r.Name, err)
			}
			// A replica that is down is what we are here to see.
			rc.lose(r.Name, 0, r.DSN.Reason(err))
			continue
		}
		rc.conn = c
		cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		err = w.checkReplica(cctx, rc)
		cancel()
		if err != nil {
			return res, fmt.Errorf("replica %s (%s): %w", r.Name, r.DSN.Redacted, dbconn.Classify(r.DSN, "check", err))
		}
		if !rc.Named && rc.known != "" {
			// Shown by the name the primary knows it by.
			rc.Name = rc.known
		}
	}

	t := &tracker{cfg: cfg, memos: map[string]*memo{}, start: time.Now()}
	for _, rc := range reps {
		rc.start = t.start
	}
	var lost outage // the primary's connection
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	var end <-chan time.Time
	if cfg.Duration > 0 {
		tm := time.NewTimer(cfg.Duration)
		defer tm.Stop()
		end = tm.C
	}
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
			case <-end:
			case <-tick.C:
			}
		}
		if ctx.Err() != nil {
			res.Stopped = probe.Interrupted
			break
		}
		if cfg.Duration > 0 && t.since() >= cfg.Duration-cfg.Interval/10 {
			res.Duration = result.Seconds(t.since())
			closeGaps(res, &lost, reps)
			return res, nil
		}
		now := time.Now()
		// Reconnect what was lost, when its backoff has passed.
		if lost.due(now) {
			c, err := dbconn.Open(ctx, primary, dbconn.Options{Timeout: cfg.Timeout})
			if err == nil {
				conn = c
				res.Gaps = append(res.Gaps, lost.end(t.since()))
				t.resetRates()
			} else {
				lost.retryFailed(primary.Reason(err))
			}
		}
		for _, rc := range reps {
			if !rc.due(now) {
				continue
			}
			c, err := dbconn.Open(ctx, rc.DSN, dbconn.Options{Timeout: cfg.Timeout})
			if err == nil {
				rc.conn = c
				cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
				err = w.checkReplica(cctx, rc)
				cancel()
				if err != nil {
					c.Close()
					rc.conn = nil
				}
			}
			if err != nil {
				rc.retryFailed(rc.DSN.Reason(err))
				continue
			}
			res.Gaps = append(res.Gaps, rc.end(t.since()))
			t.resetReplica(rc.Name)
		}
		var poll *result.ReplPoll
		if conn != nil {
			p0 := time.Now()
			pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			snap, err := w.poll(pctx, conn.Conn, reps)
			cancel()
			if ctx.Err() != nil {
				res.Stopped = probe.Interrupted
				break
			}
			switch {
			case err != nil && !dbconn.ServerError(err):
				// The primary is gone: mark the gap and retry with backoff.
				conn.Close()
				conn = nil
				lost.lose("primary", t.since(), primary.Reason(err))
				t.resetRates()
			case err != nil:
				return res, dbconn.Classify(primary, "primary", err)
			default:
				poll = t.compute(snap, string(primary.Engine))
				poll.PollTime = result.Seconds(time.Since(p0))
			}
		}
		if conn == nil {
			// No figures at all while the primary is away.
			poll = &result.ReplPoll{At: time.Now().UTC(), Engine: string(primary.Engine), Replicas: []result.ReplicaState{}, Gap: lost.gapCopy()}
		}
		res.Polls++
		if poll.Gap == nil {
			res.Last = poll
		}
		iv := result.NewInterval(result.ProbeRepl, t.last, t.since())
		t.last = t.since()
		iv.Repl = poll
		emit(iv)
	}
	res.Duration = result.Seconds(time.Since(t.start))
	closeGaps(res, &lost, reps)
	return res, nil
}

// closeGaps records the gaps still open when the run ends.
func closeGaps(res *result.Repl, primary *outage, reps []*replicaConn) {
	if primary.gap != nil {
		res.Gaps = append(res.Gaps, *primary.gap)
	}
	for _, rc := range reps {
		if rc.gap != nil {
			res.Gaps = append(res.Gaps, *rc.gap)
		}
	}
}

// memo is what the tracker remembers of one replica between polls.
type memo struct {
	prev      *raw
	prevAt    time.Time
	lastSeen  time.Time // client clock
	lastReply time.Time // primary's clock (PostgreSQL reply_time)
	ever      bool
}

// tracker turns snapshots into polls: bytes per stage, rates, silence.
type tracker struct {
	cfg       Config
	memos     map[string]*memo
	order     []string
	prevLog   *int64 // nil: no previous position to take a rate from
	prevLogAt time.Time
	start     time.Time
	last      time.Duration
}

func (t *tracker) since() time.Duration { return time.Since(t.start) }

func (t *tracker) resetRates() {
	t.prevLog = nil
	for _, m := range t.memos {
		m.prev = nil
	}
}

func (t *tracker) resetReplica(name string) {
	for k, m := range t.memos {
		if strings.HasPrefix(k, name+"\x00") {
			m.prev = nil
		}
	}
}

func key(name, db string) string { return name + "\x00" + db }

func sub(a, b *int64) *int64 {
	if a == nil || b == nil {
		return nil
	}
	v := max(*a-*b, 0)
	return &v
}

func rate(cur, prev *int64, dt time.Duration) *float64 {
	if cur == nil || prev == nil || dt <= 0 || *cur < *prev {
		return nil
	}
	v := float64(*cur-*prev) / dt.Seconds()
	return &v
}

func secs(d *time.Duration) *result.Seconds {
	if d == nil {
		return nil
	}
	s := result.Seconds(*d)
	return &s
}

// compute is the arithmetic of one poll.
func (t *tracker) compute(s *snapshot, engine string) *result.ReplPoll {
	p := &result.ReplPoll{At: s.at.UTC(), Engine: engine, LogPosition: s.logPosition, LogBytes: s.logBytes, Replicas: []result.ReplicaState{}}
	p.GenerationRate = rate(s.logBytes, t.prevLog, s.at.Sub(t.prevLogAt))
	t.prevLog, t.prevLogAt = s.logBytes, s.at
	seen := map[string]bool{}
	for i := range s.replicas {
		r := &s.replicas[i]
		k := key(r.name, r.database)
		seen[k] = true
		m := t.memos[k]
		if m == nil {
			m = &memo{}
			t.memos[k] = m
			t.order = append(t.order, k)
		}
		p.Replicas = append(p.Replicas, t.state(r, m, s))
	}
	// Replicas seen before and missing now are silent, not caught up.
	for _, k := range t.order {
		if seen[k] {
			continue
		}
		m := t.memos[k]
		name, db, _ := strings.Cut(k, "\x00")
		r := &raw{name: name, database: db, engineState: "not connected to the primary"}
		p.Replicas = append(p.Replicas, t.state(r, m, s))
	}
	return p
}

func (t *tracker) state(r *raw, m *memo, s *snapshot) result.ReplicaState {
	st := result.ReplicaState{Name: r.name, Database: r.database, EngineState: r.engineState, SyncState: r.syncState,
		IOThread: r.io, SQLThread: r.sqlThread, LastError: r.lastErr, ReplayPaused: r.replayPaused,
		SecondsBehind: secs(r.secondsBehind), SecondsBehindNull: r.sbmNull, SecondaryLag: secs(r.secondaryLag),
		WriteLag: secs(r.writeLag), FlushLag: secs(r.flushLag), ReplayLag: secs(r.replayLag), Positions: r.positions,
		Generation: r.generation, Gap: r.gap}
	// Bytes waiting at each stage.
	if r.unsent != nil {
		st.Unsent = r.unsent
	} else {
		st.Unsent = sub(s.logBytes, r.sent)
	}
	st.Unwritten = sub(r.sent, r.write)
	st.Unflushed = sub(r.write, r.flush)
	switch {
	case r.unreplayed != nil:
		st.Unreplayed = r.unreplayed
	case r.flush != nil:
		st.Unreplayed = sub(r.flush, r.replay)
	default:
		st.Unreplayed = sub(r.sent, r.replay)
	}
	// Rates since the previous poll of the same replica.
	if m.prev != nil {
		dt := s.at.Sub(m.prevAt)
		st.SendRate = rate(r.sent, m.prev.sent, dt)
		st.WriteRate = rate(r.write, m.prev.write, dt)
		st.FlushRate = rate(r.flush, m.prev.flush, dt)
		st.ReplayRate = rate(r.replay, m.prev.replay, dt)
	}
	if r.sendRate != nil {
		st.SendRate = r.sendRate
	}
	if r.replayRate != nil {
		st.ReplayRate = r.replayRate
	}
	if r.replyAge != nil {
		st.LastReply = secs(r.replyAge)
	}
	// Silence.
	now := s.at
	switch {
	case r.present && !r.silent:
		m.ever = true
		m.lastSeen = now
		if !r.replyTime.IsZero() {
			m.lastReply = r.replyTime
		}
		st.State = result.ReplicaStreaming
		if r.stopped {
			st.State = result.ReplicaStopped
		}
		if r.replyAge != nil && *r.replyAge > t.cfg.SilentAfter {
			st.State = result.ReplicaSilent
			st.SilentFor = secs(r.replyAge)
		}
		m.prev, m.prevAt = r, now
	default:
		st.State = result.ReplicaSilent
		var d time.Duration
		switch {
		case !m.lastReply.IsZero() && !s.serverNow.IsZero():
			d = max(s.serverNow.Sub(m.lastReply), 0)
		case m.ever:
			d = now.Sub(m.lastSeen)
		}
		if m.ever {
			st.SilentFor = secs(&d)
			st.LastReply = secs(&d)
		}
		// Figures of a replica that is not there are not carried over.
		st.SendRate, st.WriteRate, st.FlushRate, st.ReplayRate = nil, nil, nil, nil
		m.prev = nil
	}
	return st
}

// col returns the first of names present in row (any spelling), and
// whether any was present at all.
func col(row map[string]*string, names ...string) (*string, bool) {
	for _, n := range names {
		if v, ok := row[strings.ToLower(n)]; ok {
			return v, true
		}
	}
	return nil, false
}

func str(row map[string]*string, names ...string) string {
	if v, _ := col(row, names...); v != nil {
		return *v
	}
	return ""
}
