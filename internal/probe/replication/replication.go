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
	"sort"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
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
	at           time.Time     // client clock, after the poll
	serverNow    time.Time     // the primary's clock, when it tells it
	serverOffset time.Duration // the primary's clock minus narrows', when it tells it
	logPosition  string
	logBytes     *int64
	replicas     []raw
}

// raw is one replica as read, in absolute positions where the engine gives
// positions, or in queue sizes where it gives queues (SQL Server).
type raw struct {
	name, database                string
	named                         bool   // a replica named with --replica-dsn: its name is fixed
	app                           string // PostgreSQL application_name
	clientAddr, clientPort        string
	slot                          string
	slotOnly                      bool // a slot no walsender or named standby uses
	unreachable                   bool // MySQL: the replica's own connection gave no answer
	slotRetained                  *int64
	slotInactiveSince             time.Time
	engineState, syncState        string
	present                       bool // seen by the primary (or its replica connection) in this poll
	silent                        bool // the engine itself says the replica is not connected
	stopped                       bool // MySQL: a replication thread is off
	sent, write, flush, replay    *int64
	held                          *int64 // the furthest position the replica is known to hold
	unsent, unreplayed            *int64
	sendRate, replayRate          *float64
	generation                    *float64
	writeLag, flushLag, replayLag *time.Duration
	replyTime                     time.Time // the standby's clock
	standbyNow                    time.Time // the standby's clock, read through its own connection
	clockOffset                   *time.Duration
	secondsBehind                 *time.Duration
	sbmNull                       bool
	io, sqlThread, lastErr        string
	secondaryLag                  *time.Duration
	replayPaused                  *bool
	receiverWait                  string // PostgreSQL: the walreceiver's wait event, type/event
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
	o.gap.Reason, o.gap.Retries = reason, o.attempts
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
	// name the primary knows this replica by (PostgreSQL application_name),
	// the slot it streams from, and the addresses it may connect from.
	known string
	slot  string
	addrs []string
	// statusQuery is the spelling this replica understands (MySQL).
	statusQuery string
	start       time.Time // of the run, for gap times
}

// backSooner retries at the next poll the own session of a replica the
// primary sees streaming again, rather than at the end of its backoff: a
// standby back from an outage is reachable again, and its own figures
// should not stay missing for a backoff of up to 10 s.
func backSooner(p *result.ReplPoll, reps []*replicaConn) {
	for _, rc := range reps {
		if rc.gap == nil {
			continue
		}
		for _, st := range p.Replicas {
			if st.Name == rc.Name && st.State == result.ReplicaStreaming {
				rc.retryAt = time.Time{}
			}
		}
	}
}

// fail records that the replica's own connection is lost.
func (rc *replicaConn) fail(err error) {
	if rc.conn != nil {
		rc.conn.Close()
		rc.conn = nil
	}
	rc.lose(rc.Name, time.Since(rc.start), rc.DSN.Brief(err))
}

func newWatcher(e dbconn.Engine) watcher {
	switch e {
	case dbconn.Postgres:
		return &pgWatcher{}
	case dbconn.MySQL:
		return &myWatcher{}
	default:
		return &msWatcher{prev: map[string]CounterSample{}}
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
			if errext.IsUser(err) && !dbconn.Is(err, dbconn.Unreachable) {
				return res, fmt.Errorf("replica %s: %w", r.Name, err)
			}
			// A replica that is down is what we are here to see.
			rc.lose(r.Name, 0, r.DSN.Brief(err))
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
				lost.retryFailed(primary.Brief(err))
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
				rc.retryFailed(rc.DSN.Brief(err))
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
				lost.lose("primary", t.since(), primary.Brief(err))
				t.resetRates()
			case err != nil:
				return res, dbconn.Classify(primary, "primary", err)
			default:
				poll = t.compute(snap, string(primary.Engine))
				poll.PollTime = result.Seconds(time.Since(p0))
				backSooner(poll, reps)
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
	prev     *raw
	onDisk   int // polls in a row its walreceiver waited on its disk
	prevAt   time.Time
	slot     string
	since    time.Time // the first poll that listed it
	ever     bool      // present in some poll
	lastSeen time.Time // the last poll it was present in (client clock)
	// held is the furthest position it is known to hold, across polls.
	held *int64
	// The reply stamps (standby's clock) as narrows saw them: the last one,
	// and offset, the largest (stamp − narrows' clock at the poll) seen,
	// which is at most the standby's clock offset plus the reply's age;
	// offsetKnown once a stamp was seen to change between two polls, so
	// the age it gives is right to within one interval.
	stamp       time.Time
	offset      time.Duration
	offsetKnown bool
	// lastReply is when the last reply reached the primary, on narrows'
	// clock, once known.
	lastReply time.Time
	// flushGrew counts the polls in a row whose received-but-unflushed
	// queue grew since the one before.
	flushGrew int
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
	// written is the primary's log position at each poll, oldest first
	// (at most writtenKeep of them): when each byte of the log was
	// written, to a poll, for the age of the log not yet sent.
	written []logPoint
}

// logPoint is the primary's log position at a poll.
type logPoint struct {
	at  time.Time
	pos int64
}

// writtenKeep is how many polls of the primary's position the tracker
// keeps: an hour's at one a second, 64 KiB. Log not yet sent that is
// older than the oldest has no age (the RPO falls back to its bytes over
// the generation rate).
const writtenKeep = 3600

// wrote records the primary's log position at a poll. A position behind
// the last (a new primary, a MySQL binary log purged from under the
// count) starts the record afresh.
func (t *tracker) wrote(at time.Time, pos *int64) {
	if pos == nil {
		return
	}
	if n := len(t.written); n > 0 && *pos < t.written[n-1].pos {
		t.written = t.written[:0]
	}
	if len(t.written) == writtenKeep {
		t.written = t.written[1:] // append copies the rest once the capacity runs out
	}
	t.written = append(t.written, logPoint{at, *pos})
}

// unsentAge is how long before now the primary wrote the log at pos, the
// first byte not yet sent, interpolated between the two polls around it:
// the time a failover now would lose. False when that log is older than
// the polls kept, or not yet written.
func (t *tracker) unsentAge(pos int64, now time.Time) (time.Duration, bool) {
	i := sort.Search(len(t.written), func(i int) bool { return t.written[i].pos > pos })
	if i == 0 || i == len(t.written) {
		return 0, false
	}
	a, b := t.written[i-1], t.written[i]
	at := a.at.Add(time.Duration(float64(b.at.Sub(a.at)) * float64(pos-a.pos) / float64(b.pos-a.pos)))
	return max(now.Sub(at), 0), true
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
	t.wrote(s.at, s.logBytes)
	t.adopt(s.replicas)
	seen := map[string]bool{}
	for i := range s.replicas {
		r := &s.replicas[i]
		k := key(r.name, r.database)
		if seen[k] {
			continue // one row per replica, whatever the engine lists twice
		}
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
		r := &raw{name: name, database: db, slot: m.slot, engineState: "not connected to the primary"}
		p.Replicas = append(p.Replicas, t.state(r, m, s))
	}
	return p
}

// adopt gives a replica the row it had before when the primary lists it
// under another name: a slot no longer in use is the standby that used it
// (named by its walsender until then), and a standby that reconnected
// from a new port keeps its row through its slot.
func (t *tracker) adopt(rs []raw) {
	listed := map[string]bool{}
	for i := range rs {
		listed[key(rs[i].name, rs[i].database)] = true
	}
	for i := range rs {
		r := &rs[i]
		if r.named || r.slot == "" || t.memos[key(r.name, r.database)] != nil {
			continue
		}
		for _, k := range t.order {
			if m := t.memos[k]; m.slot == r.slot && !listed[k] {
				r.name, _, _ = strings.Cut(k, "\x00")
				listed[k] = true
				break
			}
		}
	}
}

// replyAge is the age of the standby's last reply, each difference taken
// on one clock: the standby's own (its clock_timestamp() against its
// reply_time) when narrows reads it, else narrows' own, from when it saw
// the reply stamps change. Nil when neither can tell yet.
func (t *tracker) replyAge(r *raw, m *memo, now time.Time) *time.Duration {
	if r.replyTime.IsZero() {
		return nil
	}
	d := r.replyTime.Sub(now)
	changed := !m.stamp.IsZero() && !r.replyTime.Equal(m.stamp)
	switch {
	case m.stamp.IsZero():
		m.offset = d
	case changed:
		// The reply arrived since the previous poll: its age is under one
		// interval, which also bounds the offset from above (a standby
		// clock that was stepped back starts afresh).
		m.offset = min(max(m.offset, d), d+now.Sub(m.lastSeen))
		m.offsetKnown = true
	default:
		m.offset = max(m.offset, d)
	}
	m.stamp = r.replyTime
	var age time.Duration
	switch {
	case !r.standbyNow.IsZero():
		age = max(r.standbyNow.Sub(r.replyTime), 0)
	case m.offsetKnown:
		age = m.offset - d
	default:
		return nil
	}
	m.lastReply = now.Add(-age)
	return &age
}

func (t *tracker) state(r *raw, m *memo, s *snapshot) result.ReplicaState {
	st := result.ReplicaState{Name: r.name, Database: r.database, EngineState: r.engineState, SyncState: r.syncState,
		Slot: r.slot, SlotRetained: r.slotRetained, ClockOffset: secs(r.clockOffset),
		IOThread: r.io, SQLThread: r.sqlThread, LastError: r.lastErr, ReplayPaused: r.replayPaused,
		SecondsBehind: secs(r.secondsBehind), SecondsBehindNull: r.sbmNull, SecondaryLag: secs(r.secondaryLag),
		WriteLag: secs(r.writeLag), FlushLag: secs(r.flushLag), ReplayLag: secs(r.replayLag), Positions: r.positions,
		Generation: r.generation, Gap: r.gap, ReceiverWait: r.receiverWait}
	if strings.HasPrefix(r.receiverWait, "IO/") {
		m.onDisk++
	} else {
		m.onDisk = 0
	}
	st.ReceiverOnDisk = m.onDisk
	if r.present {
		st.ClientAddr = r.clientAddr
	}
	now := s.at
	if m.lastSeen.IsZero() && !m.ever && m.since.IsZero() {
		m.since = now
	}
	if r.slot != "" {
		m.slot = r.slot
	}
	if r.held != nil && (m.held == nil || *r.held > *m.held) {
		v := *r.held
		m.held = &v
	}
	// Bytes waiting at each stage.
	if r.unsent != nil {
		st.Unsent = r.unsent
	} else {
		// A walreceiver that reconnects asks for its WAL segment from the
		// start, so at its first poll back the walsender's sent position
		// can be up to a segment behind what the standby already holds (a
		// 12 s outage at 2 MB/s read 38.4 MiB unsent, 20 s of log, as the
		// RPO): the log it lacks counts from the furthest it is known to
		// hold.
		st.Unsent = sub(s.logBytes, maxPos(r.sent, m.held))
		if st.Unsent != nil && *st.Unsent > 0 {
			if age, ok := t.unsentAge(*s.logBytes-*st.Unsent, s.at); ok {
				st.UnsentAge = secs(&age)
			}
		}
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
		dt := now.Sub(m.prevAt)
		st.SendRate = rate(r.sent, m.prev.sent, dt)
		st.WriteRate = rate(r.write, m.prev.write, dt)
		st.FlushRate = rate(r.flush, m.prev.flush, dt)
		st.ReplayRate = rate(r.replay, m.prev.replay, dt)
		cur, before := sub(r.sent, r.flush), sub(m.prev.sent, m.prev.flush)
		if cur != nil && before != nil && *cur > *before {
			m.flushGrew++
		} else {
			m.flushGrew = 0
		}
		st.UnflushedGrowing = m.flushGrew
	} else {
		m.flushGrew = 0
	}
	if r.sendRate != nil {
		st.SendRate = r.sendRate
	}
	if r.replayRate != nil {
		st.ReplayRate = r.replayRate
	}
	// Silence.
	switch {
	case r.present && !r.silent:
		age := t.replyAge(r, m, now)
		st.LastReply = secs(age)
		st.State = result.ReplicaStreaming
		if r.stopped {
			st.State = result.ReplicaStopped
		}
		switch {
		case age != nil && *age > t.cfg.SilentAfter:
			st.State, st.SilentFor = result.ReplicaSilent, secs(age)
			st.Silence = "its walsender is still there, but its replies stopped"
		case age == nil && !r.replyTime.IsZero() && now.Sub(m.since) > t.cfg.SilentAfter:
			// Connected, but no reply seen in all the time narrows watched.
			d := now.Sub(m.since)
			st.State, st.SilentFor, st.NeverHeard = result.ReplicaSilent, secs(&d), true
			st.Silence = "its walsender is there but has had no reply from it"
		}
		m.ever = true
		m.lastSeen = now
		m.prev, m.prevAt = r, now
	default:
		st.State = result.ReplicaSilent
		var d time.Duration
		switch {
		case !m.lastReply.IsZero():
			d = now.Sub(m.lastReply)
		case m.ever:
			d = now.Sub(m.lastSeen)
		case !r.slotInactiveSince.IsZero() && !s.serverNow.IsZero():
			// PostgreSQL 17 says since when (the primary's clock, read
			// against narrows' in the same poll).
			d = max(now.Sub(r.slotInactiveSince.Add(-s.serverOffset)), 0)
		default:
			d = now.Sub(m.since)
			st.NeverHeard = true
		}
		st.SilentFor = secs(&d)
		if !m.lastReply.IsZero() {
			st.LastReply = secs(&d)
		}
		st.Silence = silence(r)
		// What a failover to it would lose: all the log past what it is
		// known to hold. Its queues themselves are unknown.
		st.Unconfirmed = sub(s.logBytes, m.held)
		st.Unsent, st.Unwritten, st.Unflushed, st.Unreplayed, st.UnsentAge = nil, nil, nil, nil, nil
		// Figures of a replica that is not there are not carried over.
		st.SendRate, st.WriteRate, st.FlushRate, st.ReplayRate = nil, nil, nil, nil
		m.prev = nil
	}
	return st
}

// silence says why a replica that is not there is silent.
func silence(r *raw) string {
	switch {
	case r.silent:
		return "the primary reports it " + r.engineState
	case r.slotOnly:
		return "its slot " + r.slot + " is not in use"
	case r.unreachable:
		return result.SilenceUnreachable
	case r.engineState != "" && r.engineState != "not connected to the primary":
		return "no walsender on the primary; " + r.engineState
	}
	return "no walsender on the primary"
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
