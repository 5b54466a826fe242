//go:build linux

package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
	"github.com/narrows/narrows/internal/testenv"
)

// Experiments 3 and 4 of issue #5: a PostgreSQL primary on host A, its
// streaming standby on host B (pg_basebackup run on B across the line),
// `narrows db load` generating log on A and `narrows db repl` watching from
// A, the way a DBA would run them next to the primary.

// startPG places a primary on l.A and a standby on l.B. It skips when the
// servers cannot start, and fails instead under CI=true or
// NARROWS_REQUIRE_DB=1.
func startPG(t *testing.T, l *testbed.DelayLine) *dbserver.Postgres {
	t.Helper()
	return startPGIn(t, l, "")
}

// startPGIn is startPG with the clusters' directories in dir (the temp
// directory if "").
func startPGIn(t *testing.T, l *testbed.DelayLine, dir string) *dbserver.Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	before := l.Stats()
	pg, err := dbserver.StartPostgresOn(ctx, dbserver.PostgresOptions{Primary: placeOn(l.A), Standby: placeOn(l.B), Dir: dir})
	if err != nil {
		testenv.Need(t, testenv.DB, "PostgreSQL could not start on the testbed: %v", err)
	}
	t.Cleanup(pg.Close)
	after := l.Stats()
	t.Logf("postgres: primary %s:%d on %s, standby %s:%d on %s, streaming after %v; pg_basebackup and start moved %d bytes A→B across the line",
		pg.Primary.Addr, pg.Primary.Port, l.A.NS, pg.Standby.Addr, pg.Standby.Port, l.B.NS, time.Since(t0).Round(time.Millisecond),
		after.AtoB.Bytes-before.AtoB.Bytes)
	if after.AtoB.Bytes-before.AtoB.Bytes < 1<<20 {
		t.Fatalf("the base backup did not cross the line: %d bytes A→B", after.AtoB.Bytes-before.AtoB.Bytes)
	}
	return pg
}

// bg is narrows running in the background on a host.
type bg struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	done     chan struct{}
}

func startOn(t *testing.T, h *testbed.Host, args ...string) *bg {
	t.Helper()
	full := append(append(inNS(h), itest.Binary(t)), args...)
	p := &bg{cmd: exec.Command(full[0], full[1:]...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	if err := itest.StartTied(p.cmd); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }() //nolint:errcheck
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill() //nolint:errcheck
			<-p.done
		}
	})
	return p
}

func (p *bg) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Kill() //nolint:errcheck
		<-p.done
		t.Fatalf("narrows %v did not finish within %s; stderr:\n%s", p.cmd.Args[4:], limit, p.err.String())
	}
	if c := p.cmd.ProcessState.ExitCode(); c != 0 {
		t.Fatalf("narrows %v exited %d; stdout:\n%s\nstderr:\n%s", p.cmd.Args[4:], c, p.out.String(), p.err.String())
	}
}

func jnum(m map[string]any, k string) float64 {
	v, _ := itest.Num(m, k)
	return v
}

// replicaIn returns the named replica's state in a repl poll (an
// interval's "repl", or the summary's "repl.last").
func replicaIn(poll map[string]any, name string) map[string]any {
	rs, _ := poll["replicas"].([]any)
	for _, r := range rs {
		if m, _ := r.(map[string]any); m["replica"] == name {
			return m
		}
	}
	return nil
}

// replPoint is one poll of `narrows db repl` for one replica.
type replPoint struct {
	gen, send, replay     float64 // B/s
	unsent, unreplayed    float64 // B
	queue                 float64 // unsent + unwritten + unflushed + unreplayed
	logBytes              float64 // the primary's log position as a byte offset
	logPos                string  // and as the engine writes it (LSN, binlog file:pos)
	verdictCode, verdict  string
	paused, pausedPresent bool
	st                    map[string]any // the replica's state as narrows wrote it
}

// replRun is one `narrows db repl` across the line, with db load running.
type replRun struct {
	points          []replPoint // the intervals, the first (no rates yet) left out
	last            replPoint   // the summary's last poll
	loadRate        float64     // what db load says it held, B/s
	unsentSlope     float64     // B/s, least squares over the intervals
	unreplayedSlope float64
	interval        time.Duration
	line            string
	// logFirst and logPosFirst are the primary's log position at the
	// first poll (the one left out of points); with last's, the log
	// generated while db repl watched.
	logFirst    float64
	logPosFirst string
	// lineAtoB is what the line delivered A→B (IP bytes) while db repl
	// ran, lineFor; pollSpan is from its first poll to its last.
	lineAtoB          int64
	lineFor, pollSpan time.Duration
}

func pointOf(iv, st map[string]any) replPoint {
	p := replPoint{gen: jnum(iv, "log_generation_bytes_per_second"), send: jnum(st, "send_bytes_per_second"),
		replay: jnum(st, "replay_bytes_per_second"), unsent: jnum(st, "unsent_bytes"), unreplayed: jnum(st, "unreplayed_bytes"),
		logBytes: jnum(iv, "log_bytes"), st: st}
	p.logPos, _ = iv["log_position"].(string)
	p.queue = p.unsent + jnum(st, "unwritten_bytes") + jnum(st, "unflushed_bytes") + p.unreplayed
	p.verdictCode, _ = st["verdict_code"].(string)
	p.verdict, _ = st["verdict"].(string)
	p.paused, p.pausedPresent = st["replay_paused"].(bool)
	return p
}

// slope is the least-squares growth of y, sampled every dt.
func slope(y []float64, dt time.Duration) float64 {
	n := float64(len(y))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i, v := range y {
		x := float64(i) * dt.Seconds()
		sx, sy, sxx, sxy = sx+x, sy+v, sxx+x*x, sxy+x*v
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// runRepl holds `narrows db load --rate rate` on the primary for load
// and, after warm, watches with `narrows db repl` for watch.
func runRepl(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, rate string, load, warm, watch time.Duration) replRun {
	t.Helper()
	return runReplDSN(t, l, pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword),
		"standby1", pg.DSN(pg.Standby, "narrows", dbserver.NarrowsPassword), rate, load, warm, watch)
}

// runReplDSN is runRepl given the primary's DSN and one replica's name
// and DSN (any engine narrows reads): db load and db repl both run on
// host A, the replica is named with --replica-dsn name=replica.
func runReplDSN(t *testing.T, l *testbed.DelayLine, primary, name, standby, rate string, load, warm, watch time.Duration) replRun {
	t.Helper()
	ld := startOn(t, l.A, "db", "load", "--dsn", primary, "--rate", rate, "--duration", load.String(), "--json")
	time.Sleep(warm)
	const interval = 500 * time.Millisecond
	before, t0 := l.Stats(), time.Now()
	res := runOnA(t, l, watch+60*time.Second,
		"db", "repl", "--dsn", primary, "--replica-dsn", name+"="+standby, "--interval", interval.String(), "--duration", watch.String(), "--json")
	after, lineFor := l.Stats(), time.Since(t0)
	ld.wait(t, load+60*time.Second)
	r := replRun{interval: interval, line: lineRecord(before, after), lineAtoB: after.AtoB.Bytes - before.AtoB.Bytes, lineFor: lineFor}
	ivs, sum := itest.Records(t, res.Stdout)
	if len(ivs) < 4 {
		t.Fatalf("only %d intervals from db repl:\n%s", len(ivs), res.Stdout)
	}
	r.logFirst = jnum(itest.Obj(ivs[0], "repl"), "log_bytes")
	r.logPosFirst, _ = itest.Obj(ivs[0], "repl")["log_position"].(string)
	at := func(iv map[string]any) time.Time {
		s, _ := itest.Obj(iv, "repl")["at"].(string)
		v, _ := time.Parse(time.RFC3339Nano, s)
		return v
	}
	r.pollSpan = at(ivs[len(ivs)-1]).Sub(at(ivs[0]))
	var unsent, unreplayed []float64
	for _, iv := range ivs[1:] {
		st := replicaIn(itest.Obj(iv, "repl"), name)
		if st == nil {
			t.Fatalf("no %s in %v", name, iv)
		}
		p := pointOf(itest.Obj(iv, "repl"), st)
		r.points = append(r.points, p)
		unsent, unreplayed = append(unsent, p.unsent), append(unreplayed, p.unreplayed)
	}
	r.unsentSlope, r.unreplayedSlope = slope(unsent, interval), slope(unreplayed, interval)
	last := itest.Obj(sum, "repl", "last")
	st := replicaIn(last, name)
	if st == nil {
		t.Fatalf("no %s in the summary: %v", name, sum)
	}
	r.last = pointOf(last, st)
	_, ls := itest.Records(t, ld.out.String())
	r.loadRate = jnum(itest.Obj(ls, "db_load"), "log_bytes_per_second")
	for i, p := range r.points {
		t.Logf("poll %d: generation %.2f MB/s, send %.2f MB/s, replay %.2f MB/s; unsent %.0f B, unreplayed %.0f B, queue %.0f B; %s",
			i+1, p.gen/1e6, p.send/1e6, p.replay/1e6, p.unsent, p.unreplayed, p.queue, p.verdictCode)
	}
	t.Logf("db load held %.2f MB/s; unsent grew at %.3f MB/s, unreplayed at %.3f MB/s; last verdict %s: %s; %s",
		r.loadRate/1e6, r.unsentSlope/1e6, r.unreplayedSlope/1e6, r.last.verdictCode, r.last.verdict, r.line)
	if b, err := json.Marshal(r.last.st); err == nil {
		t.Logf("%s in the last poll: %s", name, b)
	}
	return r
}

func meanOf(ps []replPoint, f func(replPoint) float64) float64 {
	s := 0.0
	for _, p := range ps {
		s += f(p)
	}
	return s / float64(len(ps))
}

func maxOf(ps []replPoint, f func(replPoint) float64) float64 {
	m := 0.0
	for _, p := range ps {
		m = max(m, f(p))
	}
	return m
}

func replDurations() (load, warm, watch time.Duration) {
	if long() {
		return 34 * time.Second, 2 * time.Second, 30 * time.Second
	}
	return 8 * time.Second, 1500 * time.Millisecond, 5 * time.Second
}

// TestReplayNotNetwork is experiment "replay, not network": a fast line
// (2 ms RTT, no rate limit), replay paused on the standby, log generated
// at 2 MB/s. Everything is sent at once; the bytes pile up between receipt
// and replay, at the generation rate, and narrows must name replay.
func TestReplayNotNetwork(t *testing.T) {
	setUp(t, 1)
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: 2 * time.Millisecond})
	pg := startPG(t, l)
	ctx := context.Background()
	if _, err := pg.Psql(ctx, pg.Standby, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	defer pg.Psql(ctx, pg.Standby, "SELECT pg_wal_replay_resume()") //nolint:errcheck
	load, warm, watch := replDurations()
	r := runRepl(t, l, pg, "2MB/s", load, warm, watch)

	gen := meanOf(r.points, func(p replPoint) float64 { return p.gen })
	send := meanOf(r.points, func(p replPoint) float64 { return p.send })
	maxUnsent := maxOf(r.points, func(p replPoint) float64 { return p.unsent })
	t.Logf("RESULT replay: generation %.2f MB/s (db load %.2f), send %.2f MB/s, unsent at most %.0f B, unreplayed growing %.2f MB/s (%.3f of generation), verdict %s (paused %v)",
		gen/1e6, r.loadRate/1e6, send/1e6, maxUnsent, r.unreplayedSlope/1e6, r.unreplayedSlope/gen, r.last.verdictCode, r.last.paused)
	if r.last.verdictCode != "replay_bottleneck" || !strings.Contains(r.last.verdict, "replay") {
		t.Errorf("verdict %s (%s), want replay_bottleneck", r.last.verdictCode, r.last.verdict)
	}
	if strings.Contains(r.last.verdict, "network") {
		t.Errorf("the verdict blames the network on a 2 ms unshaped line: %s", r.last.verdict)
	}
	if !r.last.paused {
		t.Errorf("replay_paused = %v (present %v), want true", r.last.paused, r.last.pausedPresent)
	}
	for _, p := range r.points {
		if p.verdictCode == "send_queue_growing" {
			t.Errorf("a poll said the send queue grows: %s", p.verdict)
		}
	}
	if maxUnsent > 1<<20 {
		t.Errorf("unsent reached %.0f B on a fast line with only replay paused", maxUnsent)
	}
	if gen < 1.6e6 || gen > 2.4e6 {
		t.Errorf("generation read %.2f MB/s, want 2 MB/s ± 20%%", gen/1e6)
	}
	if d := r.unreplayedSlope/gen - 1; d < -0.2 || d > 0.2 {
		t.Errorf("unreplayed grew at %.2f MB/s; with replay paused it should grow at the generation rate %.2f MB/s (±20%%)", r.unreplayedSlope/1e6, gen/1e6)
	}
}

// TestReplKeepingUp is experiment "same link, load below capacity": 40 ms
// RTT, 100 Mbit/s, log at 2 MB/s (16 Mbit/s). The standby keeps up: the
// verdict says so and the queue stays bounded.
func TestReplKeepingUp(t *testing.T) {
	setUp(t, 1)
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: 40 * time.Millisecond, RateBitsPerSecond: 100e6})
	pg := startPG(t, l)
	// Experiment 8: plan replica, before the load, from the load's rate.
	startAgent(t, l)
	pred := planReplica(t, l, "--to", agentAddr(l), "--stage-duration", "3s", "--streams", "1", "--log-rate", "2MB/s")
	if pred.verdict != "keeps_up" || pred.growth != 0 {
		t.Errorf("plan replica: %s with the queue growing %.2f MB/s, want keeps_up (one stream %.2f MB/s for 2 MB/s of log)", pred.verdict, pred.growth/1e6, pred.capacity/1e6)
	}
	compareWindow(t, l)
	load, warm, watch := replDurations()
	r := runRepl(t, l, pg, "2MB/s", load, warm, watch)

	gen := meanOf(r.points, func(p replPoint) float64 { return p.gen })
	send := meanOf(r.points, func(p replPoint) float64 { return p.send })
	maxQueue := maxOf(r.points, func(p replPoint) float64 { return p.queue })
	maxUnsent := maxOf(r.points, func(p replPoint) float64 { return p.unsent })
	keeping := 0
	for _, p := range r.points {
		if p.verdictCode == "keeping_up" {
			keeping++
		}
	}
	t.Logf("RESULT plan replica (experiment 8): predicted before the load %s, one stream %.2f MB/s (%s), headroom %.2f× at 2 MB/s, growth %.2f MB/s; db repl: unsent slope %.3f MB/s",
		pred.verdict, pred.capacity/1e6, pred.limit, pred.headroomPeak, pred.growth/1e6, r.unsentSlope/1e6)
	t.Logf("RESULT keeping up: generation %.2f MB/s (db load %.2f), send %.2f MB/s, unsent at most %.0f B, queue at most %.0f B (%.2f s of generation), unsent slope %.3f MB/s; %d of %d polls keeping up; last verdict %s",
		gen/1e6, r.loadRate/1e6, send/1e6, maxUnsent, maxQueue, maxQueue/gen, r.unsentSlope/1e6, keeping, len(r.points), r.last.verdictCode)
	if r.last.verdictCode != "keeping_up" {
		t.Errorf("last verdict %s (%s), want keeping_up", r.last.verdictCode, r.last.verdict)
	}
	if keeping < len(r.points)*3/4 {
		t.Errorf("only %d of %d polls said keeping up", keeping, len(r.points))
	}
	// Bounded: at most about a second of log waits anywhere (the standby
	// reports its positions every second), and nothing trends upward.
	if maxQueue > 1.5*gen+(1<<20) {
		t.Errorf("the queue reached %.0f B, more than 1.5 s of generation + 1 MiB", maxQueue)
	}
	if r.unsentSlope > 0.1*gen {
		t.Errorf("unsent grew at %.3f MB/s, more than 10%% of generation", r.unsentSlope/1e6)
	}
	if d := send/gen - 1; d < -0.15 || d > 0.15 {
		t.Errorf("send %.2f MB/s vs generation %.2f MB/s: a standby that keeps up receives what is generated", send/1e6, gen/1e6)
	}
}

// fallingRmem caps the standby host's TCP receive buffer
// (net.ipv4.tcp_rmem, per namespace) so that one stream across 40 ms is
// bound by its window, well below the 100 Mbit/s line: the field case of a
// remote replica that moves 2–3 MB/s on one stream whatever the link.
// fallingWindow is the --window that gives narrows' own stream the same
// buffer (Linux doubles SO_RCVBUF: 2 × 64 KiB = 128 KiB).
const (
	fallingRmem   = 131072
	fallingWindow = "64K"
)

// fallingRTT is the line of the falling-behind experiments (PostgreSQL's
// and MariaDB's), at 100 Mbit/s.
const fallingRTT = 40 * time.Millisecond

// fallingLine is that line, with both hosts on reno.
func fallingLine(t *testing.T) *testbed.DelayLine {
	t.Helper()
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: fallingRTT, RateBitsPerSecond: 100e6})
	for _, h := range l.Hosts() {
		setCC(t, h, "reno")
	}
	return l
}

// capRmem caps h's TCP receive buffer at fallingRmem: connections made
// afterwards take it.
func capRmem(t *testing.T, h *testbed.Host) {
	t.Helper()
	sysctl(t, h, fmt.Sprintf("net.ipv4.tcp_rmem=4096 %d %d", fallingRmem, fallingRmem))
}

// fallingStreamFor is how long the falling-behind experiments measure the
// single-stream capacity.
func fallingStreamFor() time.Duration {
	if long() {
		return 10 * time.Second
	}
	return 4 * time.Second
}

// fallingCapacity starts an agent on B and measures, with host B capped,
// the single-stream capacity A→B as narrows reads it (--window
// fallingWindow). It fails t unless the stream is window-bound near 2 MB/s.
func fallingCapacity(t *testing.T, l *testbed.DelayLine) (capacity float64, verdict string) {
	t.Helper()
	startAgent(t, l)
	capacity, verdict = streamOnce(t, l, fallingStreamFor(), "--window", fallingWindow)
	t.Logf("single stream A→B, --window %s: %.2f MB/s (%s)", fallingWindow, capacity/1e6, verdict)
	if capacity > 6e6 || capacity < 0.5e6 {
		t.Fatalf("one stream carried %.2f MB/s; with a %d-byte receive buffer across %v it should be window-bound near 2 MB/s", capacity/1e6, fallingRmem, fallingRTT)
	}
	return capacity, verdict
}

func fallingDurations() (load, warm, watch time.Duration) {
	if long() {
		return 40 * time.Second, 5 * time.Second, 30 * time.Second
	}
	return 10 * time.Second, 2 * time.Second, 6 * time.Second
}

// TestReplFallingBehind is experiment "replica falling behind": 40 ms RTT,
// 100 Mbit/s, the standby host's receive buffer capped at 128 KiB, so one
// stream carries about window/RTT, some 2 MB/s. `narrows net stream`
// measures that single-stream capacity first; then `narrows db load`
// generates 5 MB/s of log, and the send queue must grow at generation −
// capacity (within 15%), with the verdict naming the network.
//
// The capacity is read with --window 64K, which gives narrows' receiver
// the standby's buffer and reads as data comes, as the walreceiver does.
// Without --window, narrows' receiver takes the host's capped buffers and
// reads as data comes (netio.BatchFor turns batching off under a small
// tcp_rmem cap): that reading must agree with the --window one.
func TestReplFallingBehind(t *testing.T) {
	setUp(t, 1)
	l := fallingLine(t)
	pg := startPG(t, l)
	// Capped after the base backup (which would take 12 s at 2 MB/s); the
	// standby is restarted so that its walreceiver connects under the cap.
	capRmem(t, l.B)
	ctx := context.Background()
	if err := pg.StopStandby(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pg.StartStandby(ctx); err != nil {
		t.Fatal(err)
	}

	capacity, streamVerdict := fallingCapacity(t, l)
	// Without --window narrows' receiver takes the host's buffers; it must
	// not batch its reads under so small a cap (netio.BatchFor), or the
	// waiting bytes close the window: it read 0.58-0.70 of this before.
	// That reading is plan replica's (experiment 8), made before the load
	// from the load's rate: it predicts the send queue's growth.
	pred := planReplica(t, l, "--to", agentAddr(l), "--stage-duration", fallingStreamFor().String(), "--streams", "1", "--log-rate", "5MB/s")
	dflt, dv := pred.capacity, "stream."+pred.limit+"_limited"
	t.Logf("RESULT single stream without --window (the host's capped buffers, plan replica): %.2f MB/s (%s), %.3f of the --window reading", dflt/1e6, dv, dflt/capacity)
	if r := dflt / capacity; r < 0.85 || r > 1.3 {
		t.Errorf("without --window narrows read %.2f MB/s, %.3f of the %.2f MB/s read with --window %s on the same capped host: its receiver should not be the limit",
			dflt/1e6, r, capacity/1e6, fallingWindow)
	}

	// narrows doctor on the same line, as a DBA would start: its verdicts
	// must name the window that host B's capped buffer was set to impose.
	doctorNamesWindow(t, l)

	load, warm, watch := fallingDurations()
	r := runRepl(t, l, pg, "5MB/s", load, warm, watch)
	gen := meanOf(r.points, func(p replPoint) float64 { return p.gen })
	send := meanOf(r.points, func(p replPoint) float64 { return p.send })
	want := gen - capacity
	ratio := r.unsentSlope / want
	t.Logf("RESULT falling behind: single stream %.2f MB/s (%s); generation %.2f MB/s (db load %.2f), send %.2f MB/s (%.3f of the stream's capacity); unsent growing %.2f MB/s, generation − capacity %.2f MB/s, ratio %.3f; verdict %s: %s",
		capacity/1e6, streamVerdict, gen/1e6, r.loadRate/1e6, send/1e6, send/capacity, r.unsentSlope/1e6, want/1e6, ratio, r.last.verdictCode, r.last.verdict)
	if gen < 1.5*capacity {
		t.Fatalf("generation %.2f MB/s is not well above the single-stream capacity %.2f MB/s: the machine could not hold the load", gen/1e6, capacity/1e6)
	}
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("unsent grew at %.2f MB/s; generation − single-stream capacity is %.2f MB/s: off by %+.1f%%, more than 15%%",
			r.unsentSlope/1e6, want/1e6, 100*(ratio-1))
	}
	if r.last.verdictCode != "send_queue_growing" || !strings.Contains(r.last.verdict, "network") {
		t.Errorf("verdict %s (%s), want send_queue_growing naming the network", r.last.verdictCode, r.last.verdict)
	}
	pr := planGrowthRatio(t, pred, r.unsentSlope)
	t.Logf("RESULT plan replica (experiment 8): predicted before the load %s at G − C = 5.00 − %.2f = %.2f MB/s; db repl measured %.2f MB/s: ratio %.3f",
		pred.verdict, pred.capacity/1e6, pred.growth/1e6, r.unsentSlope/1e6, pr)
}

// doctorNamesWindow runs `narrows doctor --to B` on host A, the shortest
// budget (the default, 3 minutes, in the long run), and holds its
// verdicts to the line's truth: one stream is
// window-limited (host B's receive buffer is capped), and that verdict is
// among the first the terminal shows, as a warning.
func doctorNamesWindow(t *testing.T, l *testbed.DelayLine) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "doctor.jsonl")
	budget := "20s" // the least doctor takes for an agent alone is 14 s
	if long() {
		budget = "3m"
	}
	t0 := time.Now()
	res := runOnA(t, l, 5*time.Minute, "doctor", "--to", agentAddr(l), "--budget", budget, "--out", out)
	took := time.Since(t0)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var rep result.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil || rep.Doctor == nil {
		t.Fatalf("the run's last line is not the doctor's summary: %v", err)
	}
	first := ""
	for i, f := range rep.Doctor.Verdicts {
		if f.Code == "stream.window_limited" {
			first = fmt.Sprintf("verdict %d of %d: %s", i+1, len(rep.Doctor.Verdicts), f.Summary)
			if f.Severity != "warning" || i >= 8 {
				t.Errorf("the window verdict is %s, number %d: it must be a warning among the first shown", f.Severity, i+1)
			}
			break
		}
	}
	t.Logf("RESULT doctor across 40 ms, host B's buffer capped: %v of a %s budget; %s", took.Round(100*time.Millisecond), budget, first)
	if first == "" || !strings.Contains(res.Stdout, "window") {
		t.Errorf("doctor did not name the window limit:\n%s", res.Stdout)
	}
}

// compareWindow is issue 15's compare test on a real line: one stream
// across 40 ms with the window fixed at 64 KiB (about 2 MB/s) against
// autotuning (the 100 Mbit/s line), each saved with --json: `narrows
// compare` finds the change significant; two runs with autotuning, no
// change: "~".
func compareWindow(t *testing.T, l *testbed.DelayLine) {
	t.Helper()
	dir := t.TempDir()
	save := func(name string, extra ...string) string {
		res := runOnA(t, l, time.Minute, append([]string{"net", "stream", "--to", agentAddr(l), "--duration", "3s", "--interval", "500ms", "--json"}, extra...)...)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(res.Stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fixed, auto1, auto2 := save("fixed.jsonl", "--window", "64K"), save("auto1.jsonl"), save("auto2.jsonl")
	cmp := func(a, b string) map[string]any {
		res := runOnA(t, l, time.Minute, "compare", "--json", a, b)
		var c struct {
			Figures []map[string]any `json:"figures"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &c); err != nil {
			t.Fatalf("compare --json: %v\n%s", err, res.Stdout)
		}
		for _, f := range c.Figures {
			if strings.HasPrefix(f["name"].(string), "throughput, 1 stream") {
				return f
			}
		}
		t.Fatalf("compare gave no single-stream throughput: %s", res.Stdout)
		return nil
	}
	change, same := cmp(fixed, auto1), cmp(auto1, auto2)
	t.Logf("RESULT compare across 40 ms: --window 64K → autotuning: %v → %v bit/s, p %v, significant %v; autotuning twice: %v → %v, p %v, significant %v",
		change["before"], change["after"], change["p_value"], change["significant"], same["before"], same["after"], same["p_value"], same["significant"])
	if change["significant"] != true || change["after"].(float64) < 2*change["before"].(float64) {
		t.Errorf("--window 64K against autotuning on a 40 ms, 100 Mbit/s line: %v", change)
	}
	if same["significant"] != false {
		t.Errorf("two runs with no change were called different: %v", same)
	}
}
