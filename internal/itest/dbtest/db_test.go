package dbtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

const wrongPassword = "Wr0ng-Passw0rd-99"

var secrets = []string{dbserver.SuperPassword, dbserver.NarrowsPassword, dbserver.ReplPassword, "limited-pw-1", wrongPassword}

func pgDSN() string          { return pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword) }
func pgStandby() string      { return pg.DSN(pg.Standby, "narrows", dbserver.NarrowsPassword) }
func pgSuper() string        { return pg.DSN(pg.Primary, "postgres", dbserver.SuperPassword) }
func mySource() string       { return maria.DSN(maria.Source, "narrows", dbserver.NarrowsPassword) }
func myReplica() string      { return maria.DSN(maria.Replica, "narrows", dbserver.NarrowsPassword) }
func pgStandbySuper() string { return pg.DSN(pg.Standby, "postgres", dbserver.SuperPassword) }

// ping runs db ping for a few seconds and returns its summary's db_ping.
func ping(t *testing.T, args ...string) map[string]any {
	t.Helper()
	r := itest.Run(t, 60*time.Second, nil, append([]string{"db", "ping", "--json"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("db ping: exit %d: %s", r.Code, r.Stderr)
	}
	noSecrets(t, "db ping", r.Stdout, r.Stderr)
	_, s := itest.Records(t, r.Stdout)
	if s["partial"] != false {
		t.Fatalf("partial: %v", s["error"])
	}
	return s
}

// besidePeer runs narrows and its peer alternately, three rounds, and
// requires both to have measured queries each round; it logs the ratios.
// It asserts no ratio: how fast narrows reads against its peer is a speed
// claim, and bench/db.sh holds it side by side as a ratio (issue 26: speed
// assertions out of the tests). Held at 0.8 here, it failed a fresh-clone
// run at a median of 0.75 against mariadb-slap with no other process on
// the CPU (rounds 0.61–0.86), where earlier runs passed: on these VMs a
// one-session query rate is mostly how late an idle vCPU wakes (issue 28
// measures that), which differs between a Go and a C client from run to
// run.
func besidePeer(t *testing.T, what string, narrows, peer func() (float64, float64)) {
	t.Helper()
	for round := 0; round < 3; round++ {
		var n, p, on, op float64
		if round%2 == 0 {
			n, on = narrows()
			p, op = peer()
		} else {
			p, op = peer()
			n, on = narrows()
		}
		if n <= 0 || p <= 0 {
			t.Fatalf("%s round %d: narrows %.0f, peer %.0f queries/s: one of them measured nothing", what, round+1, n, p)
		}
		t.Logf("%s round %d: narrows %.0f, peer %.0f, ratio %.3f; other processes used %.2f / %.2f cores",
			what, round+1, n, p, n/p, on, op)
	}
}

// pingRun runs db ping, measuring what else ran meanwhile.
func pingRun(t *testing.T, serverPid int, args ...string) (map[string]any, float64) {
	t.Helper()
	cmd := exec.Command(itest.Binary(t), append([]string{"db", "ping", "--json"}, args...)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	other, err := otherCores(cmd, serverPid)
	if err != nil {
		t.Fatalf("db ping: %v: %s", err, errb.String())
	}
	noSecrets(t, "db ping", out.String(), errb.String())
	_, s := itest.Records(t, out.String())
	return s, other
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if want == 0 || math.Abs(got-want)/want > tol {
		t.Fatalf("%s: narrows %.0f against %.0f: off by more than %.0f%%", what, got, want, 100*tol)
	}
	t.Logf("%s: narrows %.0f against %.0f (ratio %.3f)", what, got, want, got/want)
}

// TestPingPostgresBesidePgbench: one session, SELECT 1, simple protocol:
// narrows and pgbench -c1 both measure queries on the same server, over
// alternating rounds (the ratio is bench/db.sh's), and narrows' summary
// holds its figures.
func TestPingPostgresBesidePgbench(t *testing.T) {
	needPG(t)
	script := filepath.Join(t.TempDir(), "select1.sql")
	os.WriteFile(script, []byte("SELECT 1;\n"), 0o644)
	tps := regexp.MustCompile(`tps = ([0-9.]+)`)
	var summary map[string]any
	besidePeer(t, "PostgreSQL queries/s vs pgbench -c1 -M simple", func() (float64, float64) {
		s, other := pingRun(t, pg.Primary.Pid(), "--dsn", pgDSN(), "--duration", "1s")
		summary = s
		q, _ := itest.Num(itest.Obj(s, "db_ping"), "queries_per_second")
		return q, other
	}, func() (float64, float64) {
		cmd := exec.Command(filepath.Join(pg.Bin, "pgbench"), "-n", "-c1", "-T", "1", "-M", "simple", "-f", script,
			"-h", "127.0.0.1", "-p", strconv.Itoa(pg.Primary.Port), "-U", "narrows", "postgres")
		// sslmode as narrows' DSN has it: pgbench would otherwise prefer TLS here.
		cmd.Env = append(os.Environ(), "PGPASSWORD="+dbserver.NarrowsPassword, "PGSSLMODE=disable")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		other, err := otherCores(cmd, pg.Primary.Pid())
		m := tps.FindStringSubmatch(out.String())
		if err != nil || m == nil {
			t.Fatalf("pgbench: %v\n%s", err, out.String())
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v, other
	})
	if summary == nil {
		return
	}
	p := itest.Obj(summary, "db_ping")
	for _, k := range []string{"rtt_p50_seconds", "rtt_p99_seconds", "rtt_p99_9_seconds", "rtt_max_seconds"} {
		if v, ok := itest.Num(p, k); !ok || v <= 0 {
			t.Fatalf("%s = %v", k, p[k])
		}
	}
	c := itest.Obj(p, "connect")
	if v, _ := itest.Num(c, "tcp_seconds"); v <= 0 {
		t.Fatalf("connect: %v", c)
	}
	if v, _ := itest.Num(c, "login_seconds"); v <= 0 {
		t.Fatalf("connect: %v", c)
	}
	n := itest.Obj(p, "network")
	lo, okLo := itest.Num(n, "network_share_low_ratio")
	hi, okHi := itest.Num(n, "network_share_high_ratio")
	if !okLo || !okHi || lo <= 0 || lo > hi || hi > 1 || n["method"] != "bounds" || n["verdict"] == nil {
		t.Fatalf("network split: %v", n)
	}
	fs := summary["findings"].([]any)
	if !strings.HasPrefix(fs[0].(map[string]any)["summary"].(string), "A report that issues 5,000 queries spends ") {
		t.Fatalf("first finding: %v", fs[0])
	}
}

// TestPingMariaDBBesideSlap: the same against MariaDB, compared with
// mariadb-slap (the C client library) sending SELECT 1 one after another
// in one connection (--concurrency=1). mariadb-slap, not the mariadb client in batch mode: the client
// parses, formats and prints every result, which made narrows read 1.5–1.9×
// it and says nothing about the round trip; mariadb-slap only sends each
// query and reads its result, as narrows does. Its queries per second are
// the queries over its "seconds to run all queries", which include its
// one connect (a few ms against seconds).
func TestPingMariaDBBesideSlap(t *testing.T) {
	needMaria(t)
	last := 5000.0
	besidePeer(t, "MariaDB queries/s vs mariadb-slap --concurrency=1", func() (float64, float64) {
		s, other := pingRun(t, maria.Source.Pid(), "--dsn", mySource(), "--duration", "1s")
		last, _ = itest.Num(itest.Obj(s, "db_ping"), "queries_per_second")
		return last, other
	}, func() (float64, float64) {
		n := max(int(last), 1000) // about as long as narrows' 1 s
		q, other := slap(t, n)
		return q, other
	})
}

// slap runs n SELECT 1 through mariadb-slap in one connection against the
// source and returns its queries per second and the cores others used.
func slap(t *testing.T, n int) (float64, float64) {
	t.Helper()
	cmd := itest.Slap(context.Background(), maria.Source.Port, n)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	other, err := otherCores(cmd, maria.Source.Pid())
	if err != nil {
		t.Fatalf("mariadb-slap: %v\n%s", err, out.String())
	}
	secs, err := itest.SlapSeconds(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return float64(n) / secs, other
}

func TestPingPayloadAndCount(t *testing.T) {
	needPG(t)
	needMaria(t)
	for _, dsn := range []string{pgDSN(), mySource()} {
		s := ping(t, "--dsn", dsn, "--payload", "500", "--count", "3000", "--interval", "200ms")
		p := itest.Obj(s, "db_ping")
		if q, _ := itest.Num(p, "queries"); q != 3000 {
			t.Fatalf("queries %v, want 3000", q)
		}
		if b, _ := itest.Num(itest.Obj(p, "config"), "payload_bytes"); b != 500 {
			t.Fatalf("payload %v", b)
		}
		if itest.Obj(p, "config")["query"] != "SELECT '<500 characters>'" {
			t.Fatalf("query shown as %v", itest.Obj(p, "config")["query"])
		}
	}
}

// TestPingTLS: with TLS, the connect is split into TCP, TLS and login.
func TestPingTLS(t *testing.T) {
	needPG(t)
	dsn := strings.Replace(pgDSN(), "sslmode=disable", "sslmode=require", 1)
	s := ping(t, "--dsn", dsn, "--count", "500")
	c := itest.Obj(s, "db_ping", "connect")
	tcp, _ := itest.Num(c, "tcp_seconds")
	tls, _ := itest.Num(c, "tls_seconds")
	login, _ := itest.Num(c, "login_seconds")
	total, _ := itest.Num(c, "total_seconds")
	if c["tls"] != true || tcp <= 0 || tls <= 0 || login <= 0 || tcp+tls+login > total*1.001 {
		t.Fatalf("connect phases: %v", c)
	}
}

// TestPingTLSRefused: with sslmode=prefer against a server without TLS,
// pgx asks for TLS, is refused, and opens a new connection; the connect
// names that attempt and its time, and its parts add up to the whole.
// Before, "connect 21.1 ms: TCP 108 µs, no TLS, login 12.9 ms": the
// refused attempt's 8 ms were in no part.
func TestPingTLSRefused(t *testing.T) {
	needPG(t)
	pgSystemSet(t, open(t, pgSuper()), "ssl", "off")
	dsn := strings.Replace(pgDSN(), "sslmode=disable", "sslmode=prefer", 1)
	s := ping(t, "--dsn", dsn, "--count", "200")
	c := itest.Obj(s, "db_ping", "connect")
	fa, _ := c["failed_attempts"].([]any)
	if c["tls"] != false || len(fa) != 1 || fa[0].(map[string]any)["outcome"] != "tls_refused" {
		t.Fatalf("connect: %v: want one refused TLS attempt and a session without TLS", c)
	}
	sum := 0.0
	for _, k := range []string{"setup_seconds", "tcp_seconds", "tls_seconds", "login_seconds"} {
		v, _ := itest.Num(c, k)
		sum += v
	}
	took, _ := itest.Num(fa[0].(map[string]any), "seconds")
	tcp, _ := itest.Num(fa[0].(map[string]any), "tcp_seconds")
	total, _ := itest.Num(c, "total_seconds")
	if took <= 0 || tcp <= 0 || tcp > took || math.Abs(sum+took-total) > 1e-8 {
		t.Fatalf("connect: parts %.9f + refused attempt %.9f ≠ total %.9f: %v", sum, took, total, c)
	}
	r := itest.Run(t, 60*time.Second, nil, "db", "ping", "--dsn", dsn, "--count", "200")
	line := ""
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(l, "connect ") {
			line = l
		}
	}
	if r.Code != 0 || !strings.Contains(line, "TLS refused") || !strings.Contains(line, "no TLS") || !strings.Contains(r.Stdout, "Set sslmode=disable") {
		t.Fatalf("exit %d; the connect line %q does not name the refused attempt:\n%s", r.Code, line, r.Stdout)
	}
	t.Log(line)
}

// TestPingNetworkBounds: without an agent the network's round trip is
// given between two bounds measured on the way to the database, and the
// verdict rests on them; an agent beside the database (here on the same
// loopback) measures it its own way. Before, one figure from TCP
// handshakes 20 ms apart, each after an idle spell: on this 2-core VM
// 17–187 µs from run to run against net rr's 22 µs, so one run said the
// network took 86% ("the server will not help") and the next 23%. Each
// run with --agent holds both readings, the bounds and the agent's.
//
// What holds busy or idle: the low bound, the kernel's handshake RTT (no
// program wakes), is below a round trip between two programs, the agent's;
// and what the bounds say is never contradicted by the agent's share,
// either way. On loopback that share is the kernel's round trip and two
// wake-ups against MariaDB's few µs of work: 72–82% of a 17 µs SELECT 1
// in every round here, so the bounds may say the network dominates (a
// handshake read 12 µs, 69–71% of it, once in 16 rounds) and be right:
// an earlier form of this test, "the bounds never say the network
// dominates a loopback", failed on that, with the agent saying 74%. The agent's
// figure and the high bound (the database's own cheapest round trip) both
// hold two programs' wake-ups, each its own programs': neither bounds the
// other (on this VM the agent read above COM_PING's once in 16 runs, by
// 3 µs; once in CI, 102 µs against 30). The network cannot take longer
// than the database's own cheapest round trip, so narrows takes no more
// than that from the agent: its share never contradicts the bounds.
func TestPingNetworkBounds(t *testing.T) {
	needPG(t)
	needMaria(t)
	a := itest.StartAgent(t, nil)
	for _, e := range []struct{ name, dsn string }{{"postgres", pgDSN()}, {"mariadb", mySource()}} {
		t.Run(e.name, func(t *testing.T) {
			for round := 1; round <= 4; round++ {
				n := itest.Obj(ping(t, "--dsn", e.dsn, "--duration", "1s", "--agent", a.Addr), "db_ping", "network")
				low, _ := itest.Num(n, "network_rtt_low_seconds")
				high, _ := itest.Num(n, "network_rtt_high_seconds")
				agent, _ := itest.Num(n, "agent_rtt_p50_seconds")
				share, _ := itest.Num(n, "network_share_ratio")
				lo, _ := itest.Num(n, "network_share_low_ratio")
				hi, _ := itest.Num(n, "network_share_high_ratio")
				t.Logf("round %d: bounds %.1f–%.1f µs (%.0f–%.0f%%, %v), agent %.1f µs (%.0f%%, %v)",
					round, low*1e6, high*1e6, 100*lo, 100*hi, n["bounds_verdict"], agent*1e6, 100*share, n["verdict"])
				if n["method"] != "agent_rr" || !(low <= high && agent > 0) {
					t.Fatalf("network split: %v", n)
				}
				switch n["network_rtt_low_from"] {
				case "tcp_handshake_rtt":
					if low <= 0 {
						t.Fatalf("network split: %v", n)
					}
				case "slower_than_query":
					// On a busy machine the handshakes read slower than a
					// query (21 against 17.5 µs, with the other tests'
					// lanes beside): no low bound, and the bounds tell
					// nothing.
					if low != 0 || n["bounds_verdict"] != "cannot_tell" {
						t.Fatalf("the handshakes read slower than a query, yet a low bound of %.1f µs, %v: %v", low*1e6, n["bounds_verdict"], n)
					}
				case "slower_than_agent":
					// The agent's round trips, back to back as the
					// queries are, read faster than the spaced-out
					// handshakes (15.0 against 12.7 µs in a fresh
					// clone's run): no low bound.
					if low != 0 || n["tcp_handshake_rtt_p50_seconds"] == nil {
						t.Fatalf("the handshakes read slower than the agent, yet a low bound of %.1f µs: %v", low*1e6, n)
					}
				default:
					t.Fatalf("network split: %v", n)
				}
				if low > agent {
					t.Fatalf("the handshakes read %.1f µs, above the agent's round trip %.1f µs: the low bound over-reads", low*1e6, agent*1e6)
				}
				switch v := n["bounds_verdict"]; {
				case v == "network_dominates" && share < 0.5:
					t.Fatalf("the bounds say the network dominates (%.0f–%.0f%%), the agent that it takes %.0f%%: the advice that the server will not help rests on nothing", 100*lo, 100*hi, 100*share)
				case v == "server_dominates" && share > 0.5:
					t.Fatalf("the bounds say the server dominates (%.0f–%.0f%%), the agent that the network takes %.0f%%", 100*lo, 100*hi, 100*share)
				}
			}
		})
	}
}

// TestPingAgent: with an agent beside the database, the network's share
// is net rr's round trip.
func TestPingAgent(t *testing.T) {
	needPG(t)
	a := itest.StartAgent(t, nil)
	s := ping(t, "--dsn", pgDSN(), "--duration", "2s", "--agent", a.Addr)
	n := itest.Obj(s, "db_ping", "network")
	if n["method"] != "agent_rr" {
		t.Fatalf("network split: %v", n)
	}
	if v, _ := itest.Num(n, "agent_rtt_p50_seconds"); v <= 0 {
		t.Fatalf("agent rtt: %v", n)
	}
}

// TestPingReconnects: a session the server kills is reconnected with
// backoff, and the gap is marked in the intervals and the summary.
func TestPingReconnects(t *testing.T) {
	needPG(t)
	p := itest.Start(t, nil, "db", "ping", "--dsn", pgDSN(), "--duration", "5s", "--interval", "250ms", "--json")
	time.Sleep(1500 * time.Millisecond)
	killSessions(t)
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, p.Err.String())
	}
	ivs, s := itest.Records(t, p.Out.String())
	var gapRecords int
	for _, iv := range ivs {
		if iv["gap"] != nil {
			gapRecords++
		}
	}
	gaps, _ := itest.Obj(s, "db_ping")["gaps"].([]any)
	if gapRecords < 2 || len(gaps) != 1 || gaps[0].(map[string]any)["end_seconds"] == nil {
		t.Fatalf("%d gap records, gaps %v", gapRecords, gaps)
	}
	if q, _ := itest.Num(itest.Obj(s, "db_ping"), "queries"); q <= 0 {
		t.Fatal("nothing measured")
	}
	noSecrets(t, "reconnect", p.Out.String(), p.Err.String())
}

// TestReplReconnects: the watcher's own session killed on the primary is
// a gap in the records, then the figures resume with no rate carried over.
func TestReplReconnects(t *testing.T) {
	needPG(t)
	p := itest.Start(t, nil, "db", "repl", "--dsn", pgDSN(), "--interval", "250ms", "--duration", "4s", "--json")
	time.Sleep(1200 * time.Millisecond)
	killSessions(t)
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, p.Err.String())
	}
	ivs, s := itest.Records(t, p.Out.String())
	gapAt := -1
	for i, iv := range ivs {
		if itest.Obj(iv, "repl")["gap"] != nil {
			gapAt = i
			break
		}
	}
	if gapAt < 0 {
		t.Fatalf("no gap in %d records", len(ivs))
	}
	if len(itest.Obj(ivs[gapAt], "repl")["replicas"].([]any)) != 0 {
		t.Fatal("a gap record carries figures")
	}
	// The first record with figures after the gap (there may be more gap
	// records while it reconnects).
	var after map[string]any
	for _, iv := range ivs[gapAt+1:] {
		if itest.Obj(iv, "repl")["gap"] == nil {
			after = itest.Obj(iv, "repl")
			break
		}
	}
	if after == nil {
		t.Fatalf("no figures after the gap in %d records", len(ivs))
	}
	if _, ok := after["log_generation_bytes_per_second"]; ok {
		t.Fatalf("a rate across the gap: %v", after)
	}
	gaps, _ := itest.Obj(s, "repl")["gaps"].([]any)
	if len(gaps) == 0 || gaps[0].(map[string]any)["of"] != "primary" || gaps[0].(map[string]any)["end_seconds"] == nil {
		t.Fatalf("summary gaps: %v", gaps)
	}
}

// pgPosition reads pg_stat_replication and the WAL position directly.
type pgPosition struct {
	at                                  time.Time
	current, sent, write, flush, replay int64
}

func samplePG(t *testing.T, super string) pgPosition {
	t.Helper()
	c := open(t, super)
	var p pgPosition
	err := c.Conn.QueryRowContext(context.Background(), `SELECT pg_wal_lsn_diff(sent_lsn, '0/0')::bigint, pg_wal_lsn_diff(write_lsn, '0/0')::bigint,
  pg_wal_lsn_diff(flush_lsn, '0/0')::bigint, pg_wal_lsn_diff(replay_lsn, '0/0')::bigint, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint
FROM pg_stat_replication WHERE application_name = 'standby1'`).Scan(&p.sent, &p.write, &p.flush, &p.replay, &p.current)
	if err != nil {
		t.Fatal(err)
	}
	p.at = time.Now()
	return p
}

// TestReplPostgres: under a db load stream, narrows' byte lags and rates
// agree with pg_stat_replication queried directly; pausing replay on the
// standby makes the verdict "replay is the bottleneck" while the send
// stage stays near zero.
func TestReplPostgres(t *testing.T) {
	needPG(t)
	const rate = 4e6
	load := itest.Start(t, nil, "db", "load", "--dsn", pgDSN(), "--rate", "4MB/s", "--duration", "14s", "--json")
	time.Sleep(1500 * time.Millisecond)

	// Phase 1: streaming under load. Rates over the same window.
	d0 := samplePG(t, pgSuper())
	r := itest.Run(t, 60*time.Second, nil, "db", "repl", "--dsn", pgDSN(), "--replica-dsn", pgStandby(), "--interval", "500ms", "--duration", "4s", "--json")
	d1 := samplePG(t, pgSuper())
	if r.Code != 0 {
		t.Fatalf("db repl: exit %d: %s", r.Code, r.Stderr)
	}
	noSecrets(t, "db repl", r.Stdout, r.Stderr)
	ivs, _ := itest.Records(t, r.Stdout)
	var gen, send, replay []float64
	for _, iv := range ivs {
		st := replicaOf(iv, "standby1")
		if st == nil {
			t.Fatalf("no standby1 in %v", iv)
		}
		if st["state"] != "streaming" || st["verdict_code"] == "silent" {
			t.Fatalf("standby1 state %v verdict %v", st["state"], st["verdict"])
		}
		if g, ok := itest.Num(itest.Obj(iv, "repl"), "log_generation_bytes_per_second"); ok {
			gen = append(gen, g)
		}
		if v, ok := itest.Num(st, "send_bytes_per_second"); ok {
			send = append(send, v)
		}
		if v, ok := itest.Num(st, "replay_bytes_per_second"); ok {
			replay = append(replay, v)
		}
		for _, k := range []string{"unsent_bytes", "unwritten_bytes", "unflushed_bytes", "unreplayed_bytes"} {
			if v, ok := itest.Num(st, k); !ok || v < 0 || v > 8*rate {
				t.Fatalf("%s = %v while streaming at %v B/s", k, st[k], rate)
			}
		}
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	dt := d1.at.Sub(d0.at).Seconds()
	if len(gen) < 5 || len(send) < 5 || len(replay) < 5 {
		t.Fatalf("too few rates: %d %d %d", len(gen), len(send), len(replay))
	}
	within(t, "generation rate vs pg_current_wal_lsn() delta", mean(gen), float64(d1.current-d0.current)/dt, 0.2)
	within(t, "send rate vs sent_lsn delta", mean(send), float64(d1.sent-d0.sent)/dt, 0.2)
	within(t, "replay rate vs replay_lsn delta", mean(replay), float64(d1.replay-d0.replay)/dt, 0.2)

	// Phase 2: replay paused. Replay is the bottleneck; send stays near 0.
	standby := open(t, pgStandbySuper())
	exec1(t, standby, "SELECT pg_wal_replay_pause()")
	defer exec1(t, standby, "SELECT pg_wal_replay_resume()")
	r = itest.Run(t, 60*time.Second, nil, "db", "repl", "--dsn", pgDSN(), "--replica-dsn", "standby1="+pgStandby(), "--interval", "500ms", "--duration", "4s", "--json")
	if r.Code != 0 {
		t.Fatalf("db repl: exit %d: %s", r.Code, r.Stderr)
	}
	ivs, sum := itest.Records(t, r.Stdout)
	var unreplayed, unsent, gen2, send2 []float64
	for _, iv := range ivs[1:] {
		st := replicaOf(iv, "standby1")
		u, _ := itest.Num(st, "unreplayed_bytes")
		unreplayed = append(unreplayed, u)
		v, _ := itest.Num(st, "unsent_bytes")
		unsent = append(unsent, v)
		g, gok := itest.Num(itest.Obj(iv, "repl"), "log_generation_bytes_per_second")
		sr, sok := itest.Num(st, "send_bytes_per_second")
		if gok && sok {
			gen2, send2 = append(gen2, g), append(send2, sr)
		}
	}
	// Sending keeps up with what the primary wrote (not with db load's
	// 4 MB/s: on a busy machine the load writes less, and the send
	// follows it).
	if len(send2) < 4 {
		t.Fatalf("too few rates while replay is paused: %d", len(send2))
	}
	within(t, "send rate vs generation while only replay is paused", mean(send2), mean(gen2), 0.2)
	if mean(gen2) < 0.25*rate {
		t.Fatalf("db load wrote %.0f B/s, under a quarter of its %v: the phase shows nothing", mean(gen2), rate)
	}
	if unreplayed[len(unreplayed)-1] < unreplayed[0]+rate {
		t.Fatalf("unreplayed bytes did not grow: %v", unreplayed)
	}
	// Sending is not held: what is unsent at a poll is what the
	// walsender had not yet got to (on a busy machine 1.45 MB, a third
	// of a second of the load, was seen), and it does not grow with the
	// phase, as what is unreplayed does (a stalled send would keep the
	// two equal).
	if last := unsent[len(unsent)-1]; slices.Max(unsent) > unreplayed[len(unreplayed)-1]/4 || last-unsent[0] > mean(gen2)/2 {
		t.Fatalf("unsent bytes %v while only replay is paused (unreplayed %v): the send is held too", unsent, unreplayed)
	}
	st := lastReplica(t, sum, "standby1")
	if st["verdict_code"] != "replay_bottleneck" || !strings.Contains(st["verdict"].(string), "replay is the bottleneck") || st["replay_paused"] != true {
		t.Fatalf("verdict %v (%v), paused %v", st["verdict_code"], st["verdict"], st["replay_paused"])
	}
	if load.Wait(t, 30*time.Second) != 0 {
		t.Fatalf("db load: %s", load.Err.String())
	}

	// Phase 3: the load is over and replay still paused: nothing moves,
	// and narrows' bytes equal the server's to the byte (bar a few bytes
	// of WAL the server writes by itself).
	time.Sleep(700 * time.Millisecond)
	r = itest.Run(t, 60*time.Second, nil, "db", "repl", "--dsn", pgDSN(), "--interval", "200ms", "--duration", "250ms", "--json")
	d := samplePG(t, pgSuper())
	if r.Code != 0 {
		t.Fatalf("db repl: exit %d: %s", r.Code, r.Stderr)
	}
	_, sum = itest.Records(t, r.Stdout)
	m := lastReplica(t, sum, "standby1")
	u, _ := itest.Num(m, "unreplayed_bytes")
	if math.Abs(u-float64(d.flush-d.replay)) > 64<<10 {
		t.Fatalf("unreplayed: narrows %v, pg_stat_replication %d", u, d.flush-d.replay)
	}
	s, _ := itest.Num(m, "unsent_bytes")
	if math.Abs(s-float64(d.current-d.sent)) > 64<<10 {
		t.Fatalf("unsent: narrows %v, pg_stat_replication %d", s, d.current-d.sent)
	}
	t.Logf("static: unreplayed narrows %.0f vs server %d; unsent %.0f vs %d", u, d.flush-d.replay, s, d.current-d.sent)
	_, ls := itest.Records(t, load.Out.String())
	l := itest.Obj(ls, "db_load")
	if got, _ := itest.Num(l, "log_bytes_per_second"); got < 0.8*rate || got > 1.2*rate || l["table_dropped"] != true || l["measure"] != "wal_lsn" {
		t.Fatalf("db load: %v", l)
	}
	// Each INSERT commits on its own and is timed: the summary counts them
	// and gives their latency (TestSyncCommit in the testbed checks the
	// figure against a round trip it knows).
	commits, _ := itest.Num(l, "commits")
	rows, _ := itest.Num(l, "rows")
	c := itest.Obj(l, "commit_latency")
	p50, _ := itest.Num(c, "latency_p50_seconds")
	p99, _ := itest.Num(c, "latency_p99_seconds")
	most, _ := itest.Num(c, "latency_max_seconds")
	if commits < 10 || commits > rows || !(p50 > 0 && p50 <= p99 && p99 <= most) || most > 30 {
		t.Fatalf("db load commits %v of %v rows, commit latency %v", commits, rows, c)
	}
}

// TestReplMariaDBUnfetched: with the IO thread stopped under load, the
// bytes not fetched grow while Seconds_Behind_Source reads 0 or NULL.
func TestReplMariaDBUnfetched(t *testing.T) {
	needMaria(t)
	load := itest.Start(t, nil, "db", "load", "--dsn", mySource(), "--rate", "2MB/s", "--duration", "8s", "--json")
	time.Sleep(1500 * time.Millisecond)
	admin := func(sql string) {
		if _, err := maria.SQL(context.Background(), maria.Replica, sql); err != nil {
			t.Fatal(err)
		}
	}
	admin("STOP REPLICA IO_THREAD")
	defer admin("START REPLICA IO_THREAD")
	r := itest.Run(t, 60*time.Second, nil, "db", "repl", "--dsn", mySource(), "--replica-dsn", myReplica(), "--interval", "500ms", "--duration", "4s", "--json")
	if r.Code != 0 {
		t.Fatalf("db repl: exit %d: %s", r.Code, r.Stderr)
	}
	noSecrets(t, "db repl mysql", r.Stdout, r.Stderr)
	ivs, sum := itest.Records(t, r.Stdout)
	var unfetched []float64
	for _, iv := range ivs {
		st := replicaOf(iv, "replica1")
		u, _ := itest.Num(st, "unsent_bytes")
		unfetched = append(unfetched, u)
		sbm, hasSBM := itest.Num(st, "seconds_behind_source_seconds")
		if !(st["seconds_behind_source_null"] == true || hasSBM && sbm == 0) {
			t.Fatalf("Seconds_Behind_Source %v (null %v)", st["seconds_behind_source_seconds"], st["seconds_behind_source_null"])
		}
		if st["io_thread"] != "No" {
			t.Fatalf("IO thread %v", st["io_thread"])
		}
	}
	if unfetched[len(unfetched)-1] < unfetched[0]+2e6 {
		t.Fatalf("unfetched bytes did not grow: %v", unfetched)
	}
	st := lastReplica(t, sum, "replica1")
	if st["verdict_code"] != "send_queue_growing" {
		t.Fatalf("verdict %v: %v", st["verdict_code"], st["verdict"])
	}
	if rpo, _ := itest.Num(st, "rpo_bytes"); rpo < 2e6 {
		t.Fatalf("RPO %v bytes", rpo)
	}
	if load.Wait(t, 30*time.Second) != 0 {
		t.Fatalf("db load: %s", load.Err.String())
	}
}

// TestBadInput: every mistake gets one line naming what is missing, exit
// 2, and no password anywhere.
func TestBadInput(t *testing.T) {
	needPG(t)
	needMaria(t)
	// A table of the scratch table's name that is not narrows' own.
	super := open(t, pgSuper())
	exec1(t, super, "CREATE TABLE IF NOT EXISTS public.someones_table (x int)")
	exec1(t, super, "GRANT ALL ON public.someones_table TO narrows")
	closed := closedPort(t)
	wrongPG := strings.Replace(pgDSN(), dbserver.NarrowsPassword, wrongPassword, 1)
	wrongMy := strings.Replace(mySource(), dbserver.NarrowsPassword, wrongPassword, 1)
	limitedPG := pg.DSN(pg.Primary, "limited", "limited-pw-1")
	limitedMy := maria.DSN(maria.Source, "limited", "limited-pw-1")
	// A port that accepts TCP connections and never says a word, as a
	// stuck server or a wrong port does.
	silent := silentListener(t)
	agent := itest.StartAgent(t, nil)
	cases := []struct {
		name string
		args []string
		want string
		env  []string
	}{
		{"no dsn", []string{"db", "ping"}, "--dsn is required", nil},
		{"no scheme", []string{"db", "ping", "--dsn", "u:" + wrongPassword + "@db1:5432"}, "has no scheme", nil},
		{"unknown scheme", []string{"db", "ping", "--dsn", "oracle://u:" + wrongPassword + "@db1/x"}, `unknown scheme "oracle"`, nil},
		{"bad port", []string{"db", "ping", "--dsn", "postgres://u:" + wrongPassword + "@db1:70000/x"}, "invalid port", nil},
		{"unknown db command", []string{"db", "frob"}, "unknown db command", nil},
		{"nobody listening", []string{"db", "ping", "--dsn", fmt.Sprintf("postgres://narrows:%s@127.0.0.1:%d/postgres", wrongPassword, closed)}, "cannot reach 127.0.0.1:", nil},
		{"wrong password postgres", []string{"db", "ping", "--dsn", wrongPG}, `wrong user name or password for user "narrows"`, nil},
		{"wrong password mariadb", []string{"db", "ping", "--dsn", wrongMy}, `wrong user name or password for user "narrows"`, nil},
		{"no such database", []string{"db", "ping", "--dsn", strings.Replace(pgDSN(), "/postgres?", "/nosuchdb?", 1)}, `the database "nosuchdb" does not exist`, nil},
		{"repl on a standby", []string{"db", "repl", "--dsn", pgStandby(), "--duration", "1s"}, "is a standby", nil},
		{"repl without pg_monitor", []string{"db", "repl", "--dsn", limitedPG, "--duration", "1s"}, "GRANT pg_monitor TO", nil},
		// MariaDB 10.11 names the privileges its own way (TestMariaDBGrantHint runs the GRANT given).
		{"repl without BINLOG MONITOR", []string{"db", "repl", "--dsn", limitedMy, "--replica-dsn", myReplica(), "--duration", "1s"}, "GRANT BINLOG MONITOR ON *.* TO 'limited'@'127.0.0.1'", nil},
		{"replica without REPLICA MONITOR", []string{"db", "repl", "--dsn", mySource(), "--replica-dsn", maria.DSN(maria.Replica, "limited", "limited-pw-1"), "--duration", "1s"}, "GRANT REPLICA MONITOR ON *.* TO 'limited'@'127.0.0.1'", nil},
		{"replica that is a primary", []string{"db", "repl", "--dsn", pgDSN(), "--replica-dsn", pgDSN(), "--duration", "1s"}, "is not a standby", nil},
		{"mysql repl without replicas", []string{"db", "repl", "--dsn", mySource(), "--duration", "1s"}, "name each replica with --replica-dsn", nil},
		{"replica of another engine", []string{"db", "repl", "--dsn", pgDSN(), "--replica-dsn", mySource()}, "runs the primary's engine", nil},
		{"load without rights", []string{"db", "load", "--dsn", limitedPG, "--rate", "1MB/s", "--duration", "1s"}, "lacks a privilege", nil},
		{"load on a foreign table", []string{"db", "load", "--dsn", pgDSN(), "--rate", "1MB/s", "--duration", "1s", "--table", "someones_table"}, "is not narrows' own scratch table", nil},
		{"load on a standby", []string{"db", "load", "--dsn", pgStandby(), "--rate", "1MB/s", "--duration", "1s"}, "point --dsn at the primary", nil},
		{"load bad rate", []string{"db", "load", "--dsn", pgDSN(), "--rate", "fast"}, `invalid rate "fast"`, nil},
		{"bad query", []string{"db", "ping", "--dsn", pgDSN(), "--query", "SELEC 1", "--duration", "1s"}, "syntax error", nil},
		{"prometheus address invalid", []string{"db", "repl", "--dsn", pgDSN(), "--prometheus-listen", "256.1.1.1:1"}, "--prometheus-listen", nil},
		// Before: "connect: mysql://…: context deadline exceeded", exit 1.
		{"mariadb connect timeout", []string{"db", "ping", "--dsn", "mysql://narrows:" + wrongPassword + "@" + silent + "/narrows", "--timeout", "1s", "--tcp-probes", "0"},
			"accepted the TCP connection but the MySQL/MariaDB login did not finish within 1s", nil},
		{"postgres connect timeout", []string{"db", "load", "--dsn", "postgres://narrows:" + wrongPassword + "@" + silent + "/postgres?sslmode=disable", "--timeout", "1s", "--rate", "1MB/s"},
			"accepted the TCP connection but the PostgreSQL login did not finish within 1s", nil},
		// Before: three failed steps and exit 0 (issue 27); now refused
		// before the first step. A standby that does not answer is not
		// refused: db repl reports it.
		{"doctor with a wrong password", []string{"doctor", "--dsn", wrongPG}, `doctor: --dsn: connect: ` + "postgres://narrows:xxxxx@", nil},
		{"doctor with a wrong password, its words", []string{"doctor", "--dsn", wrongPG}, `wrong user name or password for user "narrows"`, nil},
		{"doctor with a replica's wrong password", []string{"doctor", "--dsn", pgDSN(), "--replica-dsn", "standby=" + strings.Replace(pgStandby(), dbserver.NarrowsPassword, wrongPassword, 1)},
			`doctor: --replica-dsn standby: connect:`, nil},
		// Before: found after the run, in a finding, exit 0.
		{"agent with a wrong secret", []string{"db", "ping", "--dsn", pgDSN(), "--duration", "20s", "--agent", agent.Addr},
			"db ping --to: authentication failed: the secret does not match", []string{"NARROWS_SECRET=not-the-agents-secret-42"}},
		// More sessions than the server takes (max_connections = 40):
		// told before the first row, and the table is dropped.
		{"load with more sessions than the server takes", []string{"db", "load", "--dsn", pgDSN(), "--rate", "1MB/s", "--duration", "1s", "--sessions", "45", "--table", "narrows_many"},
			"the server takes no more connections", nil},
		// A session read-only by its settings (a primary still): refused
		// before anything is created.
		{"load on a read-only session", []string{"db", "load", "--dsn", pgDSN() + "&options=-c%20default_transaction_read_only%3Don", "--rate", "1MB/s", "--duration", "1s"},
			"this session is read-only (transaction_read_only = on", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := itest.Run(t, 60*time.Second, c.env, c.args...)
			noSecrets(t, c.name, r.Stdout, r.Stderr)
			if r.Code != 2 {
				t.Fatalf("exit %d, want 2; stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
			}
			line := strings.TrimSuffix(r.Stderr, "\n")
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "narrows: ") || !strings.Contains(line, c.want) {
				t.Fatalf("stderr %q, want one line containing %q", r.Stderr, c.want)
			}
			if c.env != nil && r.Stdout != "" {
				t.Fatalf("the run started before the agent was checked: stdout %q", r.Stdout)
			}
			t.Log(line)
		})
	}
	if n := count(t, super, "SELECT count(*) FROM pg_class WHERE relname = 'narrows_many'"); n != 0 {
		t.Fatal("the scratch table of the run with too many sessions was left")
	}
	// The foreign table is untouched.
	var n int
	if err := super.Conn.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_class WHERE relname = 'someones_table'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the foreign table: %d, %v", n, err)
	}
}

// TestRedaction: a successful run's output, table and JSON, never holds
// the password, nor does a run whose replica is unreachable.
func TestRedaction(t *testing.T) {
	needPG(t)
	for _, args := range [][]string{
		{"db", "ping", "--dsn", pgDSN(), "--count", "200"},
		{"db", "ping", "--dsn", pgDSN(), "--count", "200", "--json"},
		{"db", "repl", "--dsn", pgDSN(), "--replica-dsn", "gone=postgres://narrows:" + wrongPassword + "@127.0.0.1:1/postgres", "--duration", "1200ms", "--interval", "400ms", "--json"},
		{"db", "repl", "--dsn", pgDSN(), "--replica-dsn", "gone=postgres://narrows:" + wrongPassword + "@127.0.0.1:1/postgres", "--duration", "1200ms", "--interval", "400ms"},
		{"db", "load", "--dsn", pgDSN(), "--rate", "1MB/s", "--duration", "1s", "--json"},
	} {
		r := itest.Run(t, 60*time.Second, nil, args...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
		}
		noSecrets(t, strings.Join(args[:2], " "), r.Stdout, r.Stderr)
		if !strings.Contains(r.Stdout, "narrows:xxxxx@") {
			t.Fatalf("%v: the DSN is not shown redacted:\n%s", args, r.Stdout)
		}
	}
}

// TestPrometheus: /metrics serves narrows_repl_* in base units, labels
// from fixed sets, nothing else.
func TestPrometheus(t *testing.T) {
	needPG(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	p := itest.Start(t, nil, "db", "repl", "--dsn", pgDSN(), "--interval", "300ms", "--duration", "4s", "--prometheus-listen", addr, "--json")
	wants := []string{"narrows_repl_up 1", `narrows_repl_queue_bytes{replica="standby1",stage="send"}`,
		`narrows_repl_queue_bytes{replica="standby1",stage="replay"}`, `narrows_repl_verdict{replica="standby1",verdict="keeping_up"}`,
		"narrows_repl_polls_total", "narrows_repl_rpo_bytes", "narrows_repl_last_reply_age_seconds", "narrows_repl_log_position_bytes",
		"narrows_repl_log_generation_bytes_per_second"}
	// Each series appears once its figure is known: the generation after
	// two polls, the standby's last reply's age once a new reply is seen
	// between two polls (it reports every wal_receiver_status_interval,
	// 1 s here). Scraped until all are there, or the 4 s run is over.
	var body string
	for i := 0; i < 40; i++ {
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(body, w) }) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, body)
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if line != "" && !strings.Contains(line, "narrows_repl_") {
			t.Fatalf("a metric that is not narrows_repl_*: %s", line)
		}
	}
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, p.Err.String())
	}
}

// TestReplPostgresSilentStandby: a stopped standby is "replica silent",
// not "0 lag". Runs last: it stops the standby (and starts it again).
func TestReplPostgresSilentStandby(t *testing.T) {
	needPG(t)
	p := itest.Start(t, nil, "db", "repl", "--dsn", pgDSN(), "--replica-dsn", pgStandby(), "--interval", "300ms", "--duration", "5s", "--json")
	time.Sleep(1500 * time.Millisecond)
	ctx := context.Background()
	if err := pg.StopStandby(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pg.StartStandby(ctx); err != nil {
			t.Errorf("restarting the standby: %v", err)
		}
	}()
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, p.Err.String())
	}
	ivs, sum := itest.Records(t, p.Out.String())
	first := replicaOf(ivs[0], "standby1")
	if first["state"] != "streaming" {
		t.Fatalf("before the stop: %v", first)
	}
	st := lastReplica(t, sum, "standby1")
	if st["state"] != "silent" || st["verdict_code"] != "silent" || !strings.Contains(st["verdict"].(string), "replica silent") {
		t.Fatalf("after the stop: %v", st)
	}
	if s, ok := itest.Num(st, "silent_for_seconds"); !ok || s < 1 {
		t.Fatalf("silent for %v", st["silent_for_seconds"])
	}
	for _, k := range []string{"unsent_bytes", "unreplayed_bytes", "replay_lag_seconds", "send_bytes_per_second"} {
		if _, ok := st[k]; ok {
			t.Fatalf("a silent replica reports %s = %v: stale or zero figures", k, st[k])
		}
	}
	if st["gap"] == nil {
		t.Fatalf("the lost replica connection is not marked: %v", st)
	}
	gaps, _ := itest.Obj(sum, "repl")["gaps"].([]any)
	if len(gaps) == 0 {
		t.Fatal("no gap in the summary")
	}
}
