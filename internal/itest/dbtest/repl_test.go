package dbtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// freePort is a loopback port nothing listened on a moment ago, for a
// listener of narrows' own.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// replicaNames are the replicas a poll lists, in order.
func replicaNames(poll map[string]any) []string {
	var out []string
	rs, _ := poll["replicas"].([]any)
	for _, r := range rs {
		out = append(out, fmt.Sprint(r.(map[string]any)["replica"]))
	}
	return out
}

// TestReplStoppedStandbyOneRow: a standby named with --replica-dsn that
// streams from a slot is one row, before and after it stops. Before, the
// slot it left was a second replica ("standby1 silent … not heard from
// since narrows started (replication slot not in use) … RPO 24.9 MiB")
// beside "dr1 silent … RPO -". Now dr1 is silent since it stopped, with
// the RPO of the log past what its slot says it flushed.
func TestReplStoppedStandbyOneRow(t *testing.T) {
	needPG(t)
	ctx := context.Background()
	super, standby := open(t, pgSuper()), open(t, pgStandbySuper())
	exec1(t, super, "SELECT pg_create_physical_replication_slot('standby1', true)")
	exec1(t, standby, "ALTER SYSTEM SET primary_slot_name = 'standby1'")
	exec1(t, standby, "SELECT pg_reload_conf()")
	t.Cleanup(func() {
		if err := pg.StartStandby(ctx); err != nil {
			t.Errorf("restarting the standby: %v", err)
		}
		sb := open(t, pgStandbySuper())
		exec1(t, sb, "ALTER SYSTEM RESET primary_slot_name")
		exec1(t, sb, "SELECT pg_reload_conf()")
		for range 100 {
			var n int
			super.Conn.QueryRowContext(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'standby1' AND active").Scan(&n)
			if n == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		exec1(t, super, "SELECT pg_drop_replication_slot('standby1')")
		if err := pg.WaitStreaming(ctx, 30*time.Second); err != nil {
			t.Error(err)
		}
	})
	// The walreceiver restarts on the new slot.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		super.Conn.QueryRowContext(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'standby1' AND active").Scan(&n)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby did not take its slot")
		}
		time.Sleep(100 * time.Millisecond)
	}
	load := itest.Start(t, nil, "db", "load", "--dsn", pgDSN(), "--rate", "1MB/s", "--duration", "8s", "--json")
	p := itest.Start(t, nil, "db", "repl", "--dsn", pgDSN(), "--replica-dsn", "dr1="+pgStandby(), "--interval", "300ms", "--duration", "5s", "--json")
	time.Sleep(1500 * time.Millisecond)
	if err := pg.StopStandby(ctx); err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, p.Err.String())
	}
	load.Wait(t, 30*time.Second)
	ivs, sum := itest.Records(t, p.Out.String())
	for _, iv := range ivs {
		if names := replicaNames(itest.Obj(iv, "repl")); strings.Join(names, ",") != "dr1" {
			t.Fatalf("one standby listed as %v", names)
		}
	}
	if st := replicaOf(ivs[0], "dr1"); st["state"] != "streaming" || st["slot"] != "standby1" {
		t.Fatalf("before the stop: %v", st)
	}
	st := lastReplica(t, sum, "dr1")
	verdict := fmt.Sprint(st["verdict"])
	t.Logf("after: %s; RPO %v bytes", verdict, st["rpo_bytes"])
	if st["state"] != "silent" || st["never_heard"] == true || strings.Contains(verdict, "since narrows started") || st["slot"] != "standby1" {
		t.Fatalf("after the stop: %v", st)
	}
	silent, _ := itest.Num(st, "silent_for_seconds")
	watched, _ := itest.Num(itest.Obj(sum, "repl"), "duration_seconds")
	if silent <= 0 || silent >= watched-1 {
		t.Fatalf("silent for %v s of a %v s run whose first 1.5 s it streamed", silent, watched)
	}
	// Its RPO is unknown, like its lag (absent, not a figure); what it
	// has not confirmed bounds it, within what the slot keeps.
	if _, ok := st["rpo_bytes"]; ok {
		t.Fatalf("a silent replica has an RPO of %v bytes: its lag is unknown", st["rpo_bytes"])
	}
	unconfirmed, ok := itest.Num(st, "unconfirmed_bytes")
	retained, _ := itest.Num(st, "slot_retained_bytes")
	if !ok || unconfirmed <= 0 || unconfirmed > retained {
		t.Fatalf("unconfirmed %v bytes, the slot keeps %v", st["unconfirmed_bytes"], retained)
	}
	for _, k := range []string{"unsent_bytes", "unreplayed_bytes", "send_bytes_per_second"} {
		if _, ok := st[k]; ok {
			t.Fatalf("a silent replica reports %s = %v", k, st[k])
		}
	}
}

// receivewal streams WAL from the primary as a client named walreceiver,
// over the Unix socket or TCP: a second and third standby, as far as the
// primary can tell.
func receivewal(t *testing.T, tcp bool) {
	t.Helper()
	dir := t.TempDir()
	conn := fmt.Sprintf("host=%s port=%d user=postgres application_name=walreceiver", pg.Primary.Sock, pg.Primary.Port)
	if tcp {
		conn = fmt.Sprintf("host=127.0.0.1 port=%d user=postgres password=%s application_name=walreceiver", pg.Primary.Port, dbserver.SuperPassword)
	}
	cmd := exec.Command(filepath.Join(pg.Bin, "pg_receivewal"), "-d", conn, "-D", dir, "--status-interval", "1", "--no-loop")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() })
}

// TestReplStandbysOfOneName: two standbys that both call themselves
// walreceiver (no cluster_name, no application_name: the default) are told
// apart by where they connect from, not "walreceiver" and "walreceiver#2".
func TestReplStandbysOfOneName(t *testing.T) {
	needPG(t)
	receivewal(t, false)
	receivewal(t, true)
	super := open(t, pgSuper())
	for i := 0; ; i++ {
		var n int
		super.Conn.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'walreceiver'").Scan(&n)
		if n == 2 {
			break
		}
		if i > 100 {
			t.Fatal("pg_receivewal did not connect")
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := itest.Run(t, 60*time.Second, nil, "db", "repl", "--dsn", pgDSN(), "--interval", "300ms", "--duration", "700ms", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	_, sum := itest.Records(t, r.Stdout)
	last := itest.Obj(sum, "repl", "last")
	// In the primary's order (pg_stat_replication's), which is not fixed.
	ns := replicaNames(last)
	slices.Sort(ns)
	names := strings.Join(ns, ",")
	if names != "standby1,walreceiver@127.0.0.1,walreceiver@local" {
		t.Fatalf("replicas %s", names)
	}
	if st := replicaIn(last, "walreceiver@127.0.0.1"); st["client_addr"] != "127.0.0.1" {
		t.Fatalf("client address: %v", st)
	}
	r = itest.Run(t, 60*time.Second, nil, "db", "repl", "--dsn", pgDSN(), "--interval", "300ms", "--duration", "700ms")
	if !strings.Contains(r.Stdout, "replica      walreceiver@127.0.0.1 (from 127.0.0.1, async)") {
		t.Fatalf("the summary does not say where it connects from:\n%s", r.Stdout)
	}
}

// TestReplReplyAgeUnderLoad: under load the standby replies many times a
// poll; its reply age, taken on one clock, is never negative (it was
// "-1819000 ns", the primary's transaction start against the standby's
// clock) and never calls a replying standby silent. Read through
// --replica-dsn it is the standby's own clock, and the two clocks'
// difference is shown (one host here: under a second).
func TestReplReplyAgeUnderLoad(t *testing.T) {
	needPG(t)
	load := itest.Start(t, nil, "db", "load", "--dsn", pgDSN(), "--rate", "4MB/s", "--duration", "6s", "--json")
	time.Sleep(time.Second)
	for _, args := range [][]string{{}, {"--replica-dsn", pgStandby()}} {
		r := itest.Run(t, 60*time.Second, nil, append([]string{"db", "repl", "--dsn", pgDSN(), "--interval", "200ms", "--duration", "3s", "--json"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		ivs, _ := itest.Records(t, r.Stdout)
		ages := 0
		for i, iv := range ivs {
			st := replicaOf(iv, "standby1")
			if st["state"] != "streaming" {
				t.Fatalf("poll %d: %v", i, st)
			}
			a, ok := itest.Num(st, "last_reply_age_seconds")
			if !ok {
				continue
			}
			ages++
			// wal_receiver_status_interval is 1 s, and a standby under load
			// replies after every write: an age beyond it is wrong.
			if a < 0 || a > 1.5 {
				t.Fatalf("poll %d: reply age %v s", i, a)
			}
			if len(args) > 0 {
				o, ok := itest.Num(st, "clock_offset_seconds")
				if !ok || o < -1 || o > 1 {
					t.Fatalf("poll %d: clock offset %v", i, st["clock_offset_seconds"])
				}
			}
		}
		if ages < len(ivs)-1 {
			t.Fatalf("%v: a reply age in %d polls of %d", args, ages, len(ivs))
		}
	}
	load.Wait(t, 30*time.Second)
}

// TestMariaDBGrantHint: a user that lacks what db repl reads is told the
// GRANT that works on this server, and running it is enough. MariaDB
// 10.11 maps REPLICATION CLIENT to BINLOG MONITOR: a replica user with it
// was told "GRANT REPLICATION CLIENT", which changed nothing; only REPLICA
// MONITOR lets it run SHOW REPLICA STATUS.
func TestMariaDBGrantHint(t *testing.T) {
	needMaria(t)
	ctx := context.Background()
	sql := func(n *dbserver.MariaNode, q string) {
		t.Helper()
		if _, err := maria.SQL(ctx, n, q); err != nil {
			t.Fatal(err)
		}
	}
	// Made on the source, so the replica has the user too.
	sql(maria.Source, "CREATE USER IF NOT EXISTS 'rc'@'127.0.0.1' IDENTIFIED BY 'limited-pw-1'; GRANT REPLICATION CLIENT ON *.* TO 'rc'@'127.0.0.1';"+
		"CREATE USER IF NOT EXISTS 'bare'@'127.0.0.1' IDENTIFIED BY 'limited-pw-1'")
	t.Cleanup(func() { maria.SQL(ctx, maria.Source, "DROP USER IF EXISTS 'rc'@'127.0.0.1', 'bare'@'127.0.0.1'") })
	if err := maria.WaitReplicating(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	dsn := func(n *dbserver.MariaNode, user string) string {
		return strings.TrimSuffix(maria.DSN(n, user, "limited-pw-1"), "narrows")
	}
	grant := regexp.MustCompile(`GRANT [A-Z ]+ ON \*\.\* TO '[a-z]+'@'127\.0\.0\.1'$`)
	for _, c := range []struct {
		name, want string
		node       *dbserver.MariaNode
		args       []string
	}{
		{"replica user with REPLICATION CLIENT", "GRANT REPLICA MONITOR ON *.* TO 'rc'@'127.0.0.1'", maria.Replica,
			[]string{"--dsn", mySource(), "--replica-dsn", dsn(maria.Replica, "rc")}},
		{"source user with nothing", "GRANT BINLOG MONITOR ON *.* TO 'bare'@'127.0.0.1'", maria.Source,
			[]string{"--dsn", dsn(maria.Source, "bare"), "--replica-dsn", myReplica()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"db", "repl", "--duration", "500ms", "--interval", "250ms"}, c.args...)
			r := itest.Run(t, 60*time.Second, nil, args...)
			line := strings.TrimSuffix(r.Stderr, "\n")
			noSecrets(t, c.name, r.Stdout, r.Stderr)
			if r.Code != 2 || strings.Contains(line, "\n") || !strings.HasSuffix(line, c.want) || !grant.MatchString(line) {
				t.Fatalf("exit %d, stderr %q; want one line ending %q", r.Code, r.Stderr, c.want)
			}
			t.Log(line)
			// What it says to run is enough.
			sql(c.node, grant.FindString(line))
			if r := itest.Run(t, 60*time.Second, nil, args...); r.Code != 0 {
				t.Fatalf("after %s: exit %d: %s", c.want, r.Code, r.Stderr)
			}
		})
	}
}

// TestReplRunSummary: the summary carries the run, not the last poll. The
// SQL thread stopped for a few seconds under load and started again: the
// last poll is keeping up, and before, so was the whole summary ("keeping
// up: 0 B behind"). Now it gives the time spent with apply the bottleneck,
// the worst unapplied queue, and Prometheus counts the same seconds.
func TestReplRunSummary(t *testing.T) {
	needMaria(t)
	ctx := context.Background()
	admin := func(q string) {
		t.Helper()
		if _, err := maria.SQL(ctx, maria.Replica, q); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t)) // for the exporter
	load := itest.Start(t, nil, "db", "load", "--dsn", mySource(), "--rate", "2MB/s", "--duration", "9s", "--json")
	p := itest.Start(t, nil, "db", "repl", "--dsn", mySource(), "--replica-dsn", myReplica(), "--interval", "300ms", "--duration", "7s", "--json", "--prometheus-listen", addr)
	time.Sleep(1500 * time.Millisecond)
	admin("STOP REPLICA SQL_THREAD")
	stopped := time.Now()
	time.Sleep(2500 * time.Millisecond)
	admin("START REPLICA SQL_THREAD")
	held := time.Since(stopped)
	time.Sleep(2 * time.Second)
	// Near the end: the counter as Prometheus has it.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, p.Err.String())
	}
	load.Wait(t, 30*time.Second)
	_, sum := itest.Records(t, p.Out.String())
	if st := lastReplica(t, sum, "replica1"); st["verdict_code"] == "replay_bottleneck" {
		t.Fatalf("the SQL thread runs again, yet: %v", st["verdict"])
	}
	runs, _ := itest.Obj(sum, "repl", "run")["replicas"].([]any)
	if len(runs) != 1 {
		t.Fatalf("run: %v", itest.Obj(sum, "repl", "run"))
	}
	run := runs[0].(map[string]any)
	var applySecs float64
	var worst string
	for _, v := range run["verdicts"].([]any) {
		if v := v.(map[string]any); v["verdict"] == "replay_bottleneck" {
			applySecs, _ = itest.Num(v, "seconds")
			worst = fmt.Sprint(v["worst"])
		}
	}
	// The thread was off for held; the polls see it to within an interval
	// either side.
	if applySecs < held.Seconds()-0.7 || applySecs > held.Seconds()+0.7 || !strings.Contains(worst, "SQL thread is not running") {
		t.Fatalf("apply bottleneck for %v s (%s), the SQL thread was off for %v", applySecs, worst, held)
	}
	var unapplied float64
	for _, s := range run["stages"].([]any) {
		if s := s.(map[string]any); s["stage"] == "replay" {
			unapplied, _ = itest.Num(s, "worst_bytes")
		}
	}
	if unapplied < 1e6 {
		t.Fatalf("worst unapplied %v bytes after seconds of a 2 MB/s load", unapplied)
	}
	found := false
	for _, f := range sum["findings"].([]any) {
		if f := f.(map[string]any); f["code"] == "repl.run" && strings.Contains(fmt.Sprint(f["summary"]), "apply bottleneck") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no finding tells of the stall: %v", sum["findings"])
	}
	m := regexp.MustCompile(`narrows_repl_verdict_seconds_total\{replica="replica1",verdict="replay_bottleneck"\} (\S+)`).FindStringSubmatch(string(body))
	if m == nil {
		t.Fatalf("no verdict seconds in /metrics:\n%s", body)
	}
	if v, _ := strconv.ParseFloat(m[1], 64); v <= 0 || v > applySecs+1e-6 {
		t.Fatalf("Prometheus says %v s of apply bottleneck, the summary %v s", v, applySecs)
	}
}

// TestReplCtrlC: Ctrl-C is how a watch ends: the summary whole and exit 0
// (it was 130 and "partial"); SIGTERM still says it was stopped (143).
func TestReplCtrlC(t *testing.T) {
	needPG(t)
	for _, c := range []struct {
		sig     syscall.Signal
		code    int
		partial bool
	}{{syscall.SIGINT, 0, false}, {syscall.SIGTERM, 143, true}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			p := itest.Start(t, nil, "db", "repl", "--dsn", pgDSN(), "--interval", "250ms", "--json")
			time.Sleep(1500 * time.Millisecond)
			p.Cmd.Process.Signal(c.sig)
			if code := p.Wait(t, 30*time.Second); code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, p.Err.String())
			}
			_, sum := itest.Records(t, p.Out.String())
			if sum["partial"] != c.partial || itest.Obj(sum, "repl")["run"] == nil {
				t.Fatalf("summary: partial %v, run %v", sum["partial"], itest.Obj(sum, "repl")["run"])
			}
			if c.code == 0 && p.Err.String() != "" {
				t.Fatalf("stderr after Ctrl-C: %q", p.Err.String())
			}
		})
	}
}

// TestReplUnreachableReplica: a replica narrows cannot reach gets a short
// row (the driver's dial error once, not twice in 400 characters), is
// called unreachable (MySQL: the source knows nothing of its replicas, so
// not "not heard from by the primary"), and its gap counts the reconnects
// that failed and the time it lasted (not "0 ns in all (0 retries)").
func TestReplUnreachableReplica(t *testing.T) {
	needPG(t)
	needMaria(t)
	for _, c := range []struct {
		engine string
		args   []string
		dsn    string
		want   string
	}{
		{"postgres", []string{"--dsn", pgDSN()}, "postgres://narrows:%s@127.0.0.1:%d/postgres", "replica silent"},
		{"mariadb", []string{"--dsn", mySource(), "--replica-dsn", myReplica()}, "mysql://narrows:%s@127.0.0.1:%d/", "replica unreachable"},
	} {
		t.Run(c.engine, func(t *testing.T) {
			port := closedPort(t)
			gone := fmt.Sprintf("gone="+c.dsn, wrongPassword, port)
			args := append([]string{"db", "repl", "--interval", "250ms", "--duration", "3s", "--replica-dsn", gone}, c.args...)
			r := itest.Run(t, 60*time.Second, nil, args...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			noSecrets(t, c.engine, r.Stdout, r.Stderr)
			reason := fmt.Sprintf("connect to 127.0.0.1:%d: connection refused", port)
			rows := 0
			for _, line := range strings.Split(r.Stdout, "\n") {
				f := strings.Fields(line)
				if len(f) < 3 || f[2] != "gone" {
					continue
				}
				rows++
				if strings.Count(line, reason) != 1 || strings.Count(line, strconv.Itoa(port)) != 1 || !strings.Contains(line, c.want) ||
					strings.Contains(line, "primary has not heard") || len(line) > 320 {
					t.Fatalf("row of %d characters:\n%s", len(line), line)
				}
			}
			if rows < 5 {
				t.Fatalf("%d rows of the unreachable replica:\n%s", rows, r.Stdout)
			}
			gap := regexp.MustCompile(`gap +gone's own session \(--replica-dsn\) lost from 0\.0 s to the end \((\d+) reconnects failed\): ` + regexp.QuoteMeta(reason) + `; the rows keep what the primary tells of it`).FindStringSubmatch(r.Stdout)
			if gap == nil {
				t.Fatalf("no gap line:\n%s", r.Stdout)
			}
			if n, _ := strconv.Atoi(gap[1]); n < 2 {
				t.Fatalf("%d reconnects failed in 3 s", n)
			}
			if !regexp.MustCompile(`narrows' own session to gone \(--replica-dsn\) was lost 1 time\(s\), [23]\.\d+ s in all \(\d+ reconnects failed, 1 still lost at the end\)`).MatchString(r.Stdout) {
				t.Fatalf("the finding does not count the gap:\n%s", r.Stdout)
			}
		})
	}
}
