package wakeup

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/sysinfo"
)

// queries are a database's round trips: one query after another on its
// session, sent and read by one locked thread in the engine's own
// protocol (dbconn.RawQuery), not pinned (libpq's clients are not), with
// two more Ps while it lives, as the pair has. Measured on this project's
// 2-vCPU VM, four rounds alternating as is and awake with the real
// clients: what it gains awake was 0.94 of pgbench -c 1's with
// PostgreSQL and 1.11 of mariadb-slap --concurrency=1's with MariaDB,
// where db ping's session over the same blocking socket, the drivers'
// code between the calls, gained 0.43 and 0.60 of theirs.
type queries struct {
	q              *dbconn.RawQuery
	req            chan runReq
	done, loopDone chan struct{}
	procs          int
	// server is the process on this host that answers the queries (0:
	// none found: the server is elsewhere, or another user's and
	// narrows not root): its CPU time is the experiment's, not other
	// work's.
	server int
}

// newQueries starts the thread on q's session.
func newQueries(q *dbconn.RawQuery) (*queries, error) {
	if q == nil || q.Sock == nil {
		return nil, errors.New("no database session")
	}
	p := &queries{q: q, req: make(chan runReq), done: make(chan struct{}), loopDone: make(chan struct{})}
	if pid, err := sysinfo.PeerProcess(q.Sock.LocalAddr(), q.Sock.RemoteAddr()); err == nil {
		p.server = pid
	}
	p.procs = runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(p.procs + 2)
	go p.loop()
	return p, nil
}

// queryWait is the most one query may take before the session is
// called stuck (a query's answer, or the server's, held that long is no
// wake-up).
const queryWait = 2 * time.Second

func (p *queries) loop() {
	defer close(p.loopDone)
	runtime.LockOSThread() // never unlocked: the thread ends with the loop
	var buf dbconn.RawBuffer
	// The clock after each query: across a network 64 of them can take
	// seconds.
	serveRuns(p.done, p.req, 1, func(d time.Duration) {
		p.q.Sock.SetDeadline(time.Now().Add(d + queryWait)) //nolint:errcheck // netio's deadlines cannot fail
	}, func() error { return p.q.Do(&buf) })
}

func (p *queries) partners() []int {
	if p.server == 0 {
		return nil
	}
	return []int{p.server}
}

func (p *queries) run(ctx context.Context, d time.Duration) (int64, time.Duration, error) {
	return ask(ctx, p.req, d)
}

// close ends the thread (it waits for a request, in no call) and the
// session.
func (p *queries) close() {
	close(p.done)
	<-p.loopDone
	p.q.Close()
	runtime.GOMAXPROCS(p.procs)
}

// errQueriesLinux: a database's queries are timed on Linux only, where a
// session's socket can block in the kernel as libpq's does; elsewhere the
// runtime's network poller would stand between them and hide the cost.
var errQueriesLinux = errors.New("a database's queries are timed on Linux only (there its socket blocks in the kernel as libpq's does; here Go's network poller would hide what waking costs): run narrows host without --dsn, or on the database's Linux client")
