//go:build linux

package experiments

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
	"github.com/narrows/narrows/internal/testenv"
)

// Experiments 3 and 4 of issue #5 again, for MariaDB: a source on host A,
// its replica on host B (the replica's IO thread pulls the binary log
// across the line), `narrows db load` generating binary log on A and
// `narrows db repl --replica-dsn` watching from A.
//
// narrows reads MariaDB in binary log coordinates: unsent_bytes is the
// source's position minus the replica's Read_Master_Log_Pos, and
// send_bytes_per_second is how fast Read_Master_Log_Pos moves. With
// MariaDB's defaults those coordinates are not the bytes that cross the
// network: binlog_annotate_row_events=ON writes an Annotate_rows event
// (the statement's text, parameters inlined) before each row event
// group, and the source sends it only to a replica that asks for it,
// which a replica does only with log_slave_updates and
// replicate_annotate_row_events both on (MariaDB sql/slave.cc,
// request_dump). The replica here, like most, runs without
// log_slave_updates, so its IO thread steps over them. db load's rows are
// random bytes, inlined as escaped string literals in the annotation, so
// well over half of its binary log never leaves the source.
// TestMariaKeepingUp measures that at the defaults; TestMariaFallingBehind
// turns the annotations off on the source, so that coordinates are bytes
// on the wire as in the PostgreSQL experiment; and
// TestMariaFallingBehindAnnotated shows what narrows' figures mean at the
// defaults, against the line's single-stream capacity.

// startMaria places a MariaDB source on l.A and its replica on l.B. It
// skips when the servers cannot start, and fails instead under CI=true or
// NARROWS_REQUIRE_DB=1.
func startMaria(t *testing.T, l *testbed.DelayLine) *dbserver.MariaDB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	m, err := dbserver.StartMariaDBOn(ctx, dbserver.MariaOptions{Source: placeOn(l.A), Replica: placeOn(l.B)})
	if err != nil {
		testenv.Need(t, testenv.DB, "MariaDB could not start on the testbed: %v", err)
	}
	t.Cleanup(m.Close)
	// The source's binlog dump thread shows where its replica connected
	// from: B, across the line.
	dump := dumpClient(ctx, t, m)
	if h, _, _ := strings.Cut(dump, ":"); h != l.B.Addr.String() {
		t.Fatalf("the source's binlog dump thread serves %q, want the replica on %s", dump, l.B.Addr)
	}
	t.Logf("mariadb: source %s:%d on %s, replica %s:%d on %s (its IO thread connected from %s), replicating after %v",
		m.Source.Addr, m.Source.Port, l.A.NS, m.Replica.Addr, m.Replica.Port, l.B.NS, dump, time.Since(t0).Round(time.Millisecond))
	return m
}

// dumpClient is the host:port the source's binlog dump thread serves.
func dumpClient(ctx context.Context, t *testing.T, m *dbserver.MariaDB) string {
	t.Helper()
	out, err := m.SQL(ctx, m.Source, "SELECT host FROM information_schema.processlist WHERE command LIKE 'Binlog Dump%'")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// restartIO restarts the replica's IO thread, so that its connection to
// the source is made afresh (under whatever the hosts now impose), and
// waits until it replicates again.
func restartIO(t *testing.T, m *dbserver.MariaDB) {
	t.Helper()
	ctx := context.Background()
	before := dumpClient(ctx, t, m)
	if _, err := m.SQL(ctx, m.Replica, "STOP SLAVE IO_THREAD; START SLAVE IO_THREAD"); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitReplicating(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		after := dumpClient(ctx, t, m)
		if after != "" && after != before && !strings.Contains(after, "\n") {
			t.Logf("the replica's IO thread reconnected: from %s, now from %s", before, after)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source still serves %q after the IO thread restarted (before: %q)", after, before)
		}
	}
}

// runMaria is runRepl for the MariaDB pair, the replica named replica1.
func runMaria(t *testing.T, l *testbed.DelayLine, m *dbserver.MariaDB, rate string, load, warm, watch time.Duration) replRun {
	t.Helper()
	return runReplDSN(t, l, m.DSN(m.Source, "narrows", dbserver.NarrowsPassword), "replica1",
		m.DSN(m.Replica, "narrows", dbserver.NarrowsPassword), rate, load, warm, watch)
}

// binlogShare is what the source's binary log holds between two
// positions of one file: all the events, and those it ships to a replica
// that does not ask for Annotate_rows (every event but those).
type binlogShare struct {
	all, shipped, annotate int64
	events                 int
}

func (b binlogShare) ratio() float64 { return float64(b.shipped) / float64(b.all) }

// annotateRowsEvent is MariaDB's ANNOTATE_ROWS_EVENT type code.
const annotateRowsEvent = 160

// binlogBetween reads the source's binary log file itself (v4 events: a
// 19-byte header with the type at 4 and the length at 9) and sums the
// events wholly inside (from, to], positions "binlog.NNNNNN:POS" as
// narrows reports them.
func binlogBetween(t *testing.T, m *dbserver.MariaDB, from, to string) binlogShare {
	t.Helper()
	ff, fp, _ := strings.Cut(from, ":")
	tf, tp, _ := strings.Cut(to, ":")
	start, err1 := strconv.ParseInt(fp, 10, 64)
	end, err2 := strconv.ParseInt(tp, 10, 64)
	if ff == "" || ff != tf || err1 != nil || err2 != nil || end <= start {
		t.Fatalf("binary log positions %q .. %q: want two positions in one file", from, to)
	}
	f, err := os.Open(filepath.Join(m.Source.Dir, "data", filepath.Base(ff)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b binlogShare
	hdr := make([]byte, 19)
	for off := int64(4); off < end; {
		if _, err := f.ReadAt(hdr, off); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		size := int64(binary.LittleEndian.Uint32(hdr[9:]))
		if size < 19 {
			t.Fatalf("binary log %s: event of %d bytes at %d", ff, size, off)
		}
		if off >= start && off+size <= end {
			b.all += size
			b.events++
			if hdr[4] == annotateRowsEvent {
				b.annotate += size
			} else {
				b.shipped += size
			}
		}
		off += size
	}
	if b.all != end-start {
		t.Fatalf("binary log %s: events between %d and %d add up to %d bytes, not %d: positions are not event boundaries", ff, start, end, b.all, end-start)
	}
	return b
}

// TestMariaKeepingUp is experiment "same link, load below capacity" for
// MariaDB at its defaults: 40 ms RTT, 100 Mbit/s, 2 MB/s of binary log.
// The replica keeps up: the verdict says so, the queue stays bounded, and
// what the replica fetched crossed the line — the events the source ships,
// which at the defaults are not all of its binary log (see above): the
// line must carry them, and not the Annotate_rows events.
func TestMariaKeepingUp(t *testing.T) {
	setUp(t, 1)
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: 40 * time.Millisecond, RateBitsPerSecond: 100e6})
	m := startMaria(t, l)
	load, warm, watch := replDurations()
	r := runMaria(t, l, m, "2MB/s", load, warm, watch)

	gen := meanOf(r.points, func(p replPoint) float64 { return p.gen })
	send := meanOf(r.points, func(p replPoint) float64 { return p.send })
	maxQueue := maxOf(r.points, func(p replPoint) float64 { return p.queue })
	maxUnsent := maxOf(r.points, func(p replPoint) float64 { return p.unsent })
	maxSBM := maxOf(r.points, func(p replPoint) float64 { return jnum(p.st, "seconds_behind_source_seconds") })
	keeping := 0
	for _, p := range r.points {
		if p.verdictCode == "keeping_up" {
			keeping++
		}
		if p.st["io_thread"] != "Yes" || p.st["sql_thread"] != "Yes" || p.st["state"] != "streaming" {
			t.Errorf("a poll read io_thread %v, sql_thread %v, state %v; want Yes, Yes, streaming", p.st["io_thread"], p.st["sql_thread"], p.st["state"])
		}
		if _, ok := itest.Num(p.st, "seconds_behind_source_seconds"); !ok {
			t.Errorf("a poll has no seconds_behind_source_seconds (null %v)", p.st["seconds_behind_source_null"])
		}
	}
	bl := binlogBetween(t, m, r.logPosFirst, r.last.logPos)
	generated := r.last.logBytes - r.logFirst
	t.Logf("RESULT maria keeping up: generation %.2f MB/s (db load %.2f), send %.2f MB/s, unsent at most %.0f B, queue at most %.0f B (%.2f s of generation), unsent slope %.3f MB/s; %d of %d polls keeping up; Seconds_Behind_Master at most %.0f s; last verdict %s",
		gen/1e6, r.loadRate/1e6, send/1e6, maxUnsent, maxQueue, maxQueue/gen, r.unsentSlope/1e6, keeping, len(r.points), maxSBM, r.last.verdictCode)
	// As rates: the line is counted over all of db repl's run, a little
	// longer than from its first poll to its last.
	lineRate, shipRate, logRate := float64(r.lineAtoB)/r.lineFor.Seconds(), float64(bl.shipped)/r.pollSpan.Seconds(), generated/r.pollSpan.Seconds()
	t.Logf("RESULT maria keeping up, the line: %.0f B of binary log in %v of polls (%d events), %d B of it shipped (%.3f; the rest Annotate_rows); line A→B %d B in %v: %.2f MB/s = %.3f of the shipped rate %.2f MB/s, %.3f of the binary log's %.2f MB/s",
		generated, r.pollSpan.Round(time.Millisecond), bl.events, bl.shipped, bl.ratio(), r.lineAtoB, r.lineFor.Round(time.Millisecond),
		lineRate/1e6, lineRate/shipRate, shipRate/1e6, lineRate/logRate, logRate/1e6)
	if r.last.verdictCode != "keeping_up" {
		t.Errorf("last verdict %s (%s), want keeping_up", r.last.verdictCode, r.last.verdict)
	}
	if keeping < len(r.points)*3/4 {
		t.Errorf("only %d of %d polls said keeping up", keeping, len(r.points))
	}
	// Bounded: the IO thread's position is live (no status interval as in
	// PostgreSQL); what waits is the log written during the poll itself
	// (the replica is read first, a round trip away) and the SQL thread's
	// last transaction. At most a second of generation, and no trend.
	if maxQueue > gen+(1<<20) {
		t.Errorf("the queue reached %.0f B, more than 1 s of generation + 1 MiB", maxQueue)
	}
	if r.unsentSlope > 0.1*gen {
		t.Errorf("unsent grew at %.3f MB/s, more than 10%% of generation", r.unsentSlope/1e6)
	}
	if d := send/gen - 1; d < -0.15 || d > 0.15 {
		t.Errorf("send %.2f MB/s vs generation %.2f MB/s: a replica that keeps up fetches what is generated", send/1e6, gen/1e6)
	}
	if d := gen/2e6 - 1; d < -0.2 || d > 0.2 {
		t.Errorf("generation read %.2f MB/s, want 2 MB/s ± 20%%", gen/1e6)
	}
	if maxSBM > 2 {
		t.Errorf("Seconds_Behind_Master reached %.0f s on a replica that keeps up", maxSBM)
	}
	// The binary log crossed the line: at least 0.8 of what the source
	// ships (TCP/IP headers add about 4%), and not the Annotate_rows
	// events, which would make it 1/shipped-share as much.
	if generated != float64(bl.all) {
		t.Errorf("narrows' log_bytes moved %.0f B, the binary log file %d B between the same positions", generated, bl.all)
	}
	if lr := lineRate / shipRate; lr < 0.8 || lr > 1.25 {
		t.Errorf("the line carried %.2f MB/s A→B while the source shipped %.2f MB/s of binary log events (%.3f): want 0.8-1.25", lineRate/1e6, shipRate/1e6, lr)
	}
}

// startFalling is the set-up of the falling-behind experiments: the pair
// placed on fallingLine, host B's receive buffer capped (as in
// TestReplFallingBehind), the replica's IO thread reconnected under the
// cap, and the single-stream capacity A→B (fallingCapacity).
func startFalling(t *testing.T) (*testbed.DelayLine, *dbserver.MariaDB, float64, string) {
	t.Helper()
	l := fallingLine(t)
	m := startMaria(t, l)
	capRmem(t, l.B)
	restartIO(t, m)
	// The IO thread's new connection, as the kernel on B shows it, has the
	// capped buffer.
	cs, err := ssConns(context.Background(), l.B, m.Source.Port)
	if err != nil || len(cs) != 1 {
		t.Fatalf("the IO thread's connection on %s: %+v, %v; want one", l.B, cs, err)
	}
	if cs[0].RcvBuf > fallingRmem {
		t.Fatalf("the IO thread's receive buffer is %d B, above the %d B cap: it connected before the cap", cs[0].RcvBuf, fallingRmem)
	}
	t.Logf("IO thread connection on B: sk_rcvbuf %d B, rcv_ssthresh %d B", cs[0].RcvBuf, cs[0].RcvSsthresh)
	capacity, verdict := fallingCapacity(t, l)
	return l, m, capacity, verdict
}

// TestMariaFallingBehind is experiment "replica falling behind" for
// MariaDB: host B's receive buffer capped so that the IO thread's one
// stream carries about 2 MB/s across 40 ms; `narrows db load` generates
// 5 MB/s of binary log, and the unfetched backlog (unsent_bytes) must grow
// at generation − single-stream capacity (within 15%), with the verdict
// naming the network. binlog_annotate_row_events is turned off on the
// source first (it is off in MySQL's counterpart, binlog_rows_query_log_events),
// so that every byte of binary log is shipped and narrows' coordinates
// are bytes on the wire — checked against the binary log file.
func TestMariaFallingBehind(t *testing.T) {
	setUp(t, 2) // the load must write well above one stream's rate
	l, m, capacity, streamVerdict := startFalling(t)
	// Global: db load's sessions, made afterwards, take it.
	if _, err := m.SQL(context.Background(), m.Source, "SET GLOBAL binlog_annotate_row_events = OFF"); err != nil {
		t.Fatal(err)
	}
	load, warm, watch := fallingDurations()
	r := runMaria(t, l, m, "5MB/s", load, warm, watch)
	bl := binlogBetween(t, m, r.logPosFirst, r.last.logPos)
	gen := meanOf(r.points, func(p replPoint) float64 { return p.gen })
	send := meanOf(r.points, func(p replPoint) float64 { return p.send })
	want := gen - capacity
	ratio := r.unsentSlope / want
	t.Logf("RESULT maria falling behind (annotations off, %.3f of the binary log shipped): single stream %.2f MB/s (%s); generation %.2f MB/s (db load %.2f), send %.2f MB/s (%.3f of the stream's capacity); unsent growing %.2f MB/s, generation − capacity %.2f MB/s, ratio %.3f; verdict %s: %s",
		bl.ratio(), capacity/1e6, streamVerdict, gen/1e6, r.loadRate/1e6, send/1e6, send/capacity, r.unsentSlope/1e6, want/1e6, ratio, r.last.verdictCode, r.last.verdict)
	if bl.ratio() < 0.99 {
		t.Fatalf("only %.3f of the binary log is shipped with binlog_annotate_row_events off (%d B of Annotate_rows): the premise fails", bl.ratio(), bl.annotate)
	}
	if gen < 1.5*capacity {
		t.Fatalf("generation %.2f MB/s is not well above the single-stream capacity %.2f MB/s: the machine could not hold the load", gen/1e6, capacity/1e6)
	}
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("unsent grew at %.2f MB/s; generation − single-stream capacity is %.2f MB/s: off by %+.1f%%, more than 15%%",
			r.unsentSlope/1e6, want/1e6, 100*(ratio-1))
	}
	// The IO thread is the one stream: it fetches at the capacity.
	if d := send/capacity - 1; d < -0.15 || d > 0.15 {
		t.Errorf("send %.2f MB/s vs the single-stream capacity %.2f MB/s: off by %+.1f%%, more than 15%%", send/1e6, capacity/1e6, 100*d)
	}
	if r.last.verdictCode != "send_queue_growing" || !strings.Contains(r.last.verdict, "network") {
		t.Errorf("verdict %s (%s), want send_queue_growing naming the network", r.last.verdictCode, r.last.verdict)
	}
}

// TestMariaFallingBehindAnnotated is the same at MariaDB's defaults
// (binlog_annotate_row_events on, the replica without log_slave_updates),
// what a DBA meets: the Annotate_rows events are written but not shipped,
// so one stream's capacity in binary log coordinates is capacity ÷
// shipped share (the share read from the binary log file). narrows'
// send_bytes_per_second must come to that — over twice what crosses the
// line — and the backlog must grow at generation − capacity ÷ share
// (within 15%), with the verdict naming the network. The load is 10 MB/s
// of binary log, so that it exceeds that larger capacity by a margin.
func TestMariaFallingBehindAnnotated(t *testing.T) {
	setUp(t, 2) // the load must write well above one stream's rate
	l, m, capacity, streamVerdict := startFalling(t)
	load, warm, watch := fallingDurations()
	r := runMaria(t, l, m, "10MB/s", load, warm, watch)
	bl := binlogBetween(t, m, r.logPosFirst, r.last.logPos)
	gen := meanOf(r.points, func(p replPoint) float64 { return p.gen })
	send := meanOf(r.points, func(p replPoint) float64 { return p.send })
	binCap := capacity / bl.ratio()
	want := gen - binCap
	ratio := r.unsentSlope / want
	t.Logf("RESULT maria falling behind at the defaults: single stream %.2f MB/s (%s); %.3f of the binary log shipped, so %.2f MB/s of binary log per stream; generation %.2f MB/s (db load %.2f), send %.2f MB/s of binary log = %.2f MB/s shipped (%.3f of the stream's capacity); unsent growing %.2f MB/s, generation − capacity ÷ share %.2f MB/s (ratio %.3f), generation − capacity %.2f MB/s; verdict %s: %s",
		capacity/1e6, streamVerdict, bl.ratio(), binCap/1e6, gen/1e6, r.loadRate/1e6, send/1e6, send*bl.ratio()/1e6, send*bl.ratio()/capacity,
		r.unsentSlope/1e6, want/1e6, ratio, (gen-capacity)/1e6, r.last.verdictCode, r.last.verdict)
	if bl.ratio() > 0.8 {
		t.Fatalf("%.3f of the binary log is shipped: the Annotate_rows events are not the share they were (%d B of %d B)", bl.ratio(), bl.annotate, bl.all)
	}
	if gen < 1.3*binCap {
		t.Fatalf("generation %.2f MB/s is not well above the stream's capacity in binary log, %.2f MB/s: the machine could not hold the load", gen/1e6, binCap/1e6)
	}
	if d := send/binCap - 1; d < -0.15 || d > 0.15 {
		t.Errorf("send %.2f MB/s of binary log vs the stream's %.2f MB/s ÷ shipped share %.3f = %.2f MB/s: off by %+.1f%%, more than 15%%",
			send/1e6, capacity/1e6, bl.ratio(), binCap/1e6, 100*d)
	}
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("unsent grew at %.2f MB/s; generation − capacity ÷ shipped share is %.2f MB/s: off by %+.1f%%, more than 15%%",
			r.unsentSlope/1e6, want/1e6, 100*(ratio-1))
	}
	if r.last.verdictCode != "send_queue_growing" || !strings.Contains(r.last.verdict, "network") {
		t.Errorf("verdict %s (%s), want send_queue_growing naming the network", r.last.verdictCode, r.last.verdict)
	}
}
