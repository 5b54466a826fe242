package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/wire"
)

func run(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	// No history unless the test names a store: the fake environment has
	// no HOME to keep it under.
	getenv := func(k string) string {
		if _, named := env["NARROWS_HISTORY"]; k == "NARROWS_NO_HISTORY" && !named {
			return "1"
		}
		// Every report a test makes is held to the invariants, as
		// itest's runs are, unless the test says otherwise.
		if _, named := env[k]; k == itest.CheckInvariants && !named {
			return "1"
		}
		return env[k]
	}
	e := cli.Env{Stdout: &out, Stderr: &errb, Getenv: getenv,
		ReadFile: cli.OSEnv().ReadFile, Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	code = cli.Main(context.Background(), e, args)
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.HasPrefix(l, "narrows: invariant broken: ") {
			t.Errorf("narrows %s: %s", strings.Join(args, " "), l)
		}
	}
	return out.String(), errb.String(), code
}

// TestBadInput: every mistake gets one line naming what is wrong and exit 2.
func TestBadInput(t *testing.T) {
	secret := map[string]string{"NARROWS_SECRET": itest.Secret}
	notThere := filepath.Join(t.TempDir(), "backup")
	aFile := filepath.Join(t.TempDir(), "backup.tar")
	os.WriteFile(aFile, nil, 0o600)
	targets := func(lines ...string) string {
		f := filepath.Join(t.TempDir(), "targets")
		os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
		return "@" + f
	}
	emptyTargets := targets("# nothing yet", "")
	twiceTargets := targets("db1=10.0.0.1", "db2=10.0.0.2", "db1=10.0.0.3")
	var many []string
	for i := range 10001 {
		many = append(many, fmt.Sprintf("l%d=10.0.%d.%d", i, i/250, i%250+1))
	}
	manyTargets := targets(many...)
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no command", nil, nil, "no command given"},
		{"unknown command", nil, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown net probe", nil, []string{"net", "ping"}, `unknown net command "ping": use ` + "`narrows net stream`, `narrows net rr`"},
		{"net alone", nil, []string{"net"}, "net: name what to do: `narrows net stream`, `narrows net rr`"},
		{"db alone", nil, []string{"db"}, "db: name what to do: `narrows db ping`, `narrows db repl`, `narrows db load`"},
		{"missing --to", secret, []string{"net", "stream"}, "--to is required"},
		{"malformed size", secret, []string{"net", "stream", "--to", "127.0.0.1", "--block", "10XB"}, `invalid size "10XB"`},
		{"malformed window", secret, []string{"net", "stream", "--to", "127.0.0.1", "--window", "lots"}, `--window: invalid size "lots"`},
		{"malformed duration", secret, []string{"net", "rr", "--to", "127.0.0.1", "--duration", "10x"}, `invalid duration "10x"`},
		{"bare duration", secret, []string{"net", "rr", "--to", "127.0.0.1", "--duration", "10"}, `invalid duration "10": give a unit, e.g. 10s or 10m`},
		{"zero duration", secret, []string{"net", "rr", "--to", "127.0.0.1", "--duration", "0"}, "must be more than zero"},
		{"bad port", secret, []string{"net", "rr", "--to", "127.0.0.1:99999"}, `invalid port "99999"`},
		{"port zero", secret, []string{"net", "rr", "--to", "127.0.0.1:0"}, `invalid port "0"`},
		{"empty host", secret, []string{"net", "rr", "--to", ":7447"}, "the host is missing"},
		{"unknown flag", secret, []string{"net", "rr", "--to", "127.0.0.1", "--bogus"}, "flag provided but not defined: -bogus"},
		{"stray argument", secret, []string{"net", "rr", "--to", "127.0.0.1", "extra"}, `unexpected argument "extra"`},
		{"net mtu without --to", secret, []string{"net", "mtu"}, "--to is required"},
		{"host too short", nil, []string{"host", "--duration", "5s"}, "--duration 5s: the experiment needs at least 34s (four pairs of blocks, as is and awake)"},
		{"host no queries", nil, []string{"host", "--queries", "0"}, "--queries 0: must be more than zero"},
		{"host try-coalescing alone", nil, []string{"host", "--try-coalescing"}, "--try-coalescing changes the NIC of the agent's host: give the agent with --to"},
		{"host dsn sql server", nil, []string{"host", "--dsn", "sqlserver://sa:Hunter2secret@db1:1433?database=master"}, "SQL Server's queries cannot be timed so"},
		{"host dsn unknown scheme", nil, []string{"host", "--dsn", "oracle://scott:tiger@db1/orcl"}, "host: --dsn:"},
		{"host dsn bad timeout", nil, []string{"host", "--dsn", "postgres://u:Hunter2secret@db1/postgres", "--timeout", "0s"}, "--timeout"},
		// narrows host -- COMMAND: the operator's own job.
		{"host job nothing", nil, []string{"host", "--"}, "host: nothing after --: give the job's command"},
		{"host job no such program", nil, []string{"host", "--", "/nonexistent/narrows-report", "--password=Hunter2secret"}, `the job's program "narrows-report" cannot be run`},
		{"host job with an agent", nil, []string{"host", "--to", "127.0.0.1", "--", "sleep", "1"}, "a job is timed on this host alone"},
		{"host job with a dsn", nil, []string{"host", "--dsn", "postgres://u:Hunter2secret@db1/postgres", "--", "sleep", "1"}, "a job is timed on this host alone"},
		{"host job without --", nil, []string{"host", "pgbench", "-t", "100"}, `host: unexpected argument "pgbench"`},
		{"host job bad flag before --", nil, []string{"host", "--queries", "0", "--", "sleep", "1"}, "--queries 0: must be more than zero"},
		{"try-coalescing paced", secret, []string{"net", "rr", "--to", "127.0.0.1", "--try-coalescing", "--rate", "100"}, "--try-coalescing times round trips back to back on an idle path: drop --under-load and --rate"},
		{"try-coalescing under load", secret, []string{"net", "rr", "--to", "127.0.0.1", "--try-coalescing", "--under-load"}, "--try-coalescing times round trips back to back on an idle path"},
		{"try-rps both ways", secret, []string{"net", "stream", "--to", "127.0.0.1", "--bidir", "--try-rps"}, "--try-rps steers the receiving end of one direction: use it without --bidir"},
		{"try-offloads both ways", secret, []string{"net", "stream", "--to", "127.0.0.1", "--bidir", "--try-offloads"}, "--try-offloads turns on one direction's offloads: use it without --bidir"},
		{"net mtu direction", secret, []string{"net", "mtu", "--to", "127.0.0.1", "--direction", "sideways"}, `--direction "sideways": use up, down or both`},
		{"under load direction", secret, []string{"net", "rr", "--to", "127.0.0.1", "--under-load", "--load-direction", "left"}, `--load-direction "left": use up, down or both`},
		{"under load streams", secret, []string{"net", "rr", "--to", "127.0.0.1", "--under-load", "--load-streams", "0"}, "--load-streams 0: use 1 to 64"},
		{"under load count", secret, []string{"net", "rr", "--to", "127.0.0.1", "--under-load", "--count", "10"}, "drop --count and --rate"},
		{"reverse and bidir", secret, []string{"net", "stream", "--to", "127.0.0.1", "--reverse", "--bidir"}, "choose one"},
		{"too many streams", secret, []string{"net", "stream", "--to", "127.0.0.1", "--streams", "1000"}, "--streams 1000"},
		{"huge request", secret, []string{"net", "rr", "--to", "127.0.0.1", "--request", "1G"}, "--request: use 1 byte to 16M"},
		{"missing secret file", nil, []string{"net", "rr", "--to", "127.0.0.1", "--secret-file", "/nonexistent/secret"}, "cannot read the secret file: /nonexistent/secret"},
		{"unknown host", secret, []string{"net", "rr", "--to", "no-such-host.invalid", "--duration", "1s"}, `unknown host "no-such-host.invalid"`},
		{"nobody listening", secret, []string{"net", "rr", "--to", "127.0.0.1:1", "--duration", "1s"}, "connection refused; start `narrows serve` there"},
		{"serve without secret", nil, []string{"serve", "--listen", "127.0.0.1:0"}, "no secret"},
		{"serve insecure on all addresses", nil, []string{"serve", "--insecure", "--listen", ":0"}, "--insecure is allowed only on a loopback address"},
		{"serve with a hostname", secret, []string{"serve", "--listen", "example.com:7447"}, "must be an IP address"},
		{"serve bad timeout", secret, []string{"serve", "--listen", "127.0.0.1:0", "--idle-timeout", "soon"}, `--idle-timeout: invalid duration "soon"`},
		{"client secret and --insecure", secret, []string{"net", "rr", "--to", "127.0.0.1", "--insecure"}, "choose one"},
		{"db ping agent secret and --insecure", secret, []string{"db", "ping", "--dsn", "postgres://u@127.0.0.1:1/db", "--agent", "127.0.0.1", "--insecure"}, "choose one"},
		{"serve bad memory size", secret, []string{"serve", "--listen", "127.0.0.1:0", "--max-memory", "lots"}, `--max-memory "lots": invalid size "lots"`},
		{"serve tiny memory", secret, []string{"serve", "--listen", "127.0.0.1:0", "--max-test-memory", "64K"}, `--max-test-memory "64K": must be at least 1MiB`},
		{"serve test memory above total", secret, []string{"serve", "--listen", "127.0.0.1:0", "--max-memory", "64M", "--max-test-memory", "128M"}, "--max-test-memory 128M is more than --max-memory 64M"},
		{"plan without a command", nil, []string{"plan"}, "plan: name what to do: `narrows plan backup`"},
		{"plan without stages", nil, []string{"plan", "backup"}, "give the stage rates: measure them through an agent (--to AGENT), read them --from a saved run, or --assume them"},
		{"plan bad size", nil, []string{"plan", "backup", "--assume", "network=1Gbit/s", "--size", "lots"}, `--size: invalid size "lots"`},
		{"plan bad stage", nil, []string{"plan", "backup", "--assume", "wire=1Gbit/s"}, `unknown name "wire"`},
		{"plan bad rate", nil, []string{"plan", "backup", "--assume", "network=fast"}, `network=fast: give a rate`},
		{"plan bad engine", nil, []string{"plan", "backup", "--assume", "network=1Gbit/s", "--engine", "tape"}, `--engine "tape"`},
		{"plan codec without figures", nil, []string{"plan", "backup", "--assume", "network=1Gbit/s", "--compression", "zstd"}, "compression zstd: no figures for it"},
		{"plan unknown codec", nil, []string{"plan", "backup", "--assume", "network=1Gbit/s", "--compression", "brotli"}, `--compression "brotli"`},
		{"plan half a codec", nil, []string{"plan", "backup", "--assume", "zstd-3.ratio=4"}, "give zstd-3's compress, decompress and ratio"},
		{"plan codec in the old form", nil, []string{"plan", "backup", "--assume", "zstd-3=compress:400MB/s,decompress:1.2GB/s,ratio:4"}, "write a codec's figures as zstd-3.compress=400MB/s,zstd-3.decompress=1.2GB/s,zstd-3.ratio=4"},
		{"plan unknown codec assumed", nil, []string{"plan", "backup", "--assume", "brotli-3.ratio=4"}, `unknown codec "brotli-3"`},
		{"plan from nothing", nil, []string{"plan", "backup", "--from", "/nonexistent/run.jsonl"}, "--from: open /nonexistent/run.jsonl"},
		{"serve bad log format", secret, []string{"serve", "--listen", "127.0.0.1:0", "--log-format", "xml"}, "--log-format"},
		{"serve disk path missing", secret, []string{"serve", "--listen", "127.0.0.1:0", "--disk-path", notThere}, "--disk-path " + notThere + " does not exist"},
		{"serve disk path a file", secret, []string{"serve", "--listen", "127.0.0.1:0", "--disk-path", aFile}, "--disk-path " + aFile + " is not a directory"},
		{"serve disk path empty", secret, []string{"serve", "--listen", "127.0.0.1:0", "--disk-path", ""}, "--disk-path: give a directory"},
		{"serve bad disk size", secret, []string{"serve", "--listen", "127.0.0.1:0", "--max-disk-size", "64K"}, `--max-disk-size "64K": must be at least 1MiB`},
		{"disk --on bad address", secret, []string{"disk", "--on", "db2:", "--path", "/backup"}, `--to "db2:": invalid port`},
		{"disk --on and --device", secret, []string{"disk", "--on", "127.0.0.1", "--device", "/dev/sda"}, "--device with --to"},
		{"disk --on and --clean-stale", secret, []string{"disk", "--on", "127.0.0.1", "--path", "/backup", "--clean-stale"}, "run `narrows disk --path DIR --clean-stale` on the agent's host"},
		{"disk --insecure without --to", nil, []string{"disk", "--path", "/backup", "--insecure"}, "apply to --to AGENT"},
		{"disk --on secret and --insecure", secret, []string{"disk", "--on", "127.0.0.1", "--path", "/backup", "--insecure"}, "choose one"},
		{"fleet --slo without --sweep", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--slo", "p99=2ms"}, "--slo judges the steps of a sweep: add --sweep"},
		{"fleet --sweep of threads", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--sweep", "threads=1,2"}, "give the queue depths to step, e.g. qd=1,2,4,8,16,32,64"},
		{"fleet --sweep depth 0", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--sweep", "qd=0,4"}, `"0" is not a queue depth from 1 to 256`},
		{"fleet --sweep one depth", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--sweep", "qd=4"}, "give at least two depths"},
		{"fleet --sweep the log", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--profile", "log", "--sweep", "qd=1,2"}, "waits for each flush before the next write: no queue depth to sweep"},
		{"fleet --sweep too many steps", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--sweep", "qd=1,2,4,8,16,32,64,128,256"}, "2 shapes at 9 depths are 18 steps: a sweep runs at most 16"},
		{"fleet --qd with --sweep", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--qd", "4", "--sweep", "qd=1,2"}, "--qd with --sweep"},
		{"fleet --slo unknown quantile", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--sweep", "qd=1,2", "--slo", "p95=2ms"}, "p50, p90, p99 or p99.9"},
		{"fleet --slo bad bound", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--sweep", "qd=1,2", "--slo", "p99=fast"}, `"fast" is not a duration`},
		{"fleet custom flags with a profile", secret, []string{"fleet", "disk", "--on", "127.0.0.1", "--profile", "data", "--rw", "randread"}, "--rw shape --profile custom, not data"},
		{"fleet net without --to", secret, []string{"fleet", "net"}, "--to is required: the fleet's agents"},
		{"fleet net a host twice", secret, []string{"fleet", "net", "--to", "db1,db2,db1"}, "--to names db1 twice"},
		{"fleet net no streams", secret, []string{"fleet", "net", "--to", "db1,db2", "--streams-per-host", "0"}, "--streams-per-host 0: use 1 to 128"},
		{"fleet net too many streams", secret, []string{"fleet", "net", "--to", manyHosts(33), "--streams-per-host", "128"}, "is 4224 streams: a fleet run sends at most 4096"},
		{"fleet net bad nic rate", secret, []string{"fleet", "net", "--to", "db1", "--assume", "nic=fast"}, `invalid rate "fast"`},
		{"fleet net unknown assumption", secret, []string{"fleet", "net", "--to", "db1", "--assume", "disk=1GB/s"}, `unknown name "disk": use nic`},
		{"fleet net bad block", secret, []string{"fleet", "net", "--to", "db1", "--block", "64M"}, "--block 64M: use 1 byte to 16M"},
		{"fleet net bad address", secret, []string{"fleet", "net", "--to", "db1,db2:"}, `--to "db2:": invalid port`},
		{"fleet net no file", secret, []string{"fleet", "net", "--to", "@/nonexistent/hosts"}, "--to @/nonexistent/hosts: open /nonexistent/hosts"},
		{"fleet watch without --targets", secret, []string{"fleet", "watch"}, "--targets is required"},
		{"fleet watch no file", secret, []string{"fleet", "watch", "--targets", "@/nonexistent/targets"}, "--targets @/nonexistent/targets: open /nonexistent/targets"},
		{"fleet watch empty file", secret, []string{"fleet", "watch", "--targets", emptyTargets}, "names no link"},
		{"fleet watch a name twice", secret, []string{"fleet", "watch", "--targets", twiceTargets}, "line 3: the name db1 again (first " + twiceTargets + " line 1)"},
		{"fleet watch a host twice unnamed", secret, []string{"fleet", "watch", "--targets", "db1,db1:7448"}, "the name db1 again"},
		{"fleet watch too many", secret, []string{"fleet", "watch", "--targets", manyTargets}, "more than 10000 links"},
		{"fleet watch bad name", secret, []string{"fleet", "watch", "--targets", "db 1=10.0.0.1"}, `the name "db 1": use letters, digits`},
		{"fleet watch a label's quotes", secret, []string{"fleet", "watch", "--targets", `a"}=10.0.0.1`}, "use letters, digits"},
		{"fleet watch unnamed IPv6", secret, []string{"fleet", "watch", "--targets", "[::1]:7447"}, "the name (the host's, as none was given)"},
		{"fleet watch bad port", secret, []string{"fleet", "watch", "--targets", "db1=10.0.0.1:99999"}, `invalid port "99999"`},
		{"fleet watch no host", secret, []string{"fleet", "watch", "--targets", "db1="}, "the host is missing"},
		{"fleet watch bad rate", secret, []string{"fleet", "watch", "--targets", "db1", "--rate", "0"}, "--rate 0: use 0.1 to 1000"},
		{"fleet watch bad interval", secret, []string{"fleet", "watch", "--targets", "db1", "--interval", "soon"}, `--interval: invalid duration "soon"`},
		{"fleet watch mtu too often", secret, []string{"fleet", "watch", "--targets", "db1", "--mtu-every", "10s"}, "--mtu-every 10s: use at least 1m"},
		{"fleet watch streams overlap", secret, []string{"fleet", "watch", "--targets", manyHosts(100), "--stream-every", "5m"}, "--stream-every 5m for 100 links: their streams, one link's at a time, would fill half the time or more; use --stream-every 13m20s or more, or 0"},
		{"fleet watch bad listen", secret, []string{"fleet", "watch", "--targets", "db1", "--prometheus-listen", "nowhere:http"}, "--prometheus-listen nowhere:http"},
		{"fleet watch stray argument", secret, []string{"fleet", "watch", "--targets", "db1", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := run(t, c.env, c.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit code %d, want 2; stderr %q", code, stderr)
			}
			last := strings.TrimSuffix(stderr, "\n")
			if strings.Contains(last, "\n") || !strings.Contains(last, c.want) || !strings.HasPrefix(last, "narrows: ") {
				t.Fatalf("stderr %q, want one line containing %q", stderr, c.want)
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, itest.Secret) || strings.Contains(stderr, "Hunter2secret") {
				t.Fatalf("stack trace or secret in output: %q", stderr)
			}
		})
	}
}

// TestHelpEveryCommand: --help (and -h) on every command and command
// group prints its usage on standard output and exits 0 (issue 12:
// `narrows db --help` was an error).
func TestHelpEveryCommand(t *testing.T) {
	cmds := [][]string{{"net"}, {"db"}, {"plan"}, {"net", "stream"}, {"net", "rr"}, {"net", "commit"}, {"db", "ping"}, {"db", "repl"}, {"db", "load"},
		{"disk"}, {"serve"}, {"version"}, {"plan", "backup"}, {"plan", "sync"}, {"plan", "replica"}, {"plan", "chatty"}, {"fleet"}, {"fleet", "disk"}, {"fleet", "net"}, {"fleet", "watch"}, {"watch"}, {"host"}}
	for _, words := range cmds {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string{}, words...), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				out, stderr, code := run(t, nil, args...)
				if code != cli.ExitOK || stderr != "" || !strings.HasPrefix(out, "Usage: narrows "+strings.Join(words, " ")) {
					t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr, out)
				}
				// Flags as the README writes them: --to, never -to.
				for _, line := range strings.Split(out, "\n") {
					if strings.HasPrefix(strings.TrimSpace(line), "-") && !strings.HasPrefix(strings.TrimSpace(line), "--") {
						t.Fatalf("a single-dash flag: %q in\n%s", line, out)
					}
				}
			})
		}
	}
	// A group lists its commands, one line each.
	for group, want := range map[string][]string{
		"db":    {"db ping", "db repl", "db load"},
		"net":   {"net stream", "net rr", "net commit"},
		"plan":  {"plan backup", "plan sync", "plan replica", "plan chatty"},
		"fleet": {"fleet disk", "fleet net", "fleet watch"},
	} {
		out, _, _ := run(t, nil, group, "--help")
		for _, c := range want {
			if n := strings.Count(out, "\n  "+c+" "); n != 1 {
				t.Fatalf("%s --help lists %s %d times:\n%s", group, c, n, out)
			}
		}
	}
	// Defaults are shown.
	if out, _, _ := run(t, nil, "net", "stream", "--help"); !strings.Contains(out, "--block string") || !strings.Contains(out, `(default "128K")`) {
		t.Fatalf("net stream --help:\n%s", out)
	}
}

// TestNotAnAgent: a port where something other than a narrows agent
// listens gets one line saying so, exit 2, whether it closes at once,
// answers in another protocol, or says nothing.
func TestNotAnAgent(t *testing.T) {
	secret := map[string]string{"NARROWS_SECRET": itest.Secret}
	cases := []struct {
		name  string
		serve func(net.Conn)
		want  string
	}{
		{"closes at once", func(c net.Conn) { c.Close() }, "closed it without answering narrows' handshake: it is not a narrows agent"},
		{"another protocol", func(c net.Conn) {
			c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"))
			io.Copy(io.Discard, c)
		}, "does not speak narrows' protocol: it is not a narrows agent"},
		{"silent", func(c net.Conn) { io.Copy(io.Discard, c) }, "did not answer narrows' handshake within 1s: it is not a narrows agent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					go func() { c.serve(conn); conn.Close() }()
				}
			}()
			for _, probe := range [][]string{{"net", "rr"}, {"net", "stream"}} {
				args := append(probe, "--to", ln.Addr().String(), "--duration", "1s", "--timeout", "1s")
				stdout, stderr, code := run(t, secret, args...)
				if code != cli.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, ln.Addr().String()) {
					t.Fatalf("%s: exit %d, stderr %q; want 2 and one line containing %q", strings.Join(probe, " "), code, stderr, c.want)
				}
				if stdout != "" {
					t.Fatalf("%s printed %q", strings.Join(probe, " "), stdout)
				}
			}
		})
	}
}

// TestDurationBeyondTheAgentsMaximum: a --duration longer than the
// agent's --max-duration is refused up front, in words, exit 2 — not run
// short (net rr) nor refused mid-run as an empty partial table (net stream).
func TestDurationBeyondTheAgentsMaximum(t *testing.T) {
	a := itest.StartAgent(t, []string{"--max-duration", "5s"})
	want := "--duration 1h: the agent at " + a.Addr + " allows tests of up to 5s (its --max-duration): use --duration 5s or less, or restart the agent with --max-duration 1h"
	for _, probe := range [][]string{{"net", "rr"}, {"net", "stream"}, {"net", "stream", "--streams", "2"}} {
		r := itest.Run(t, 30*time.Second, nil, append(probe, "--to", a.Addr, "--duration", "1h")...)
		if r.Code != cli.ExitUsage || r.Stderr != "narrows: "+want+"\n" || r.Stdout != "" {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(probe, " "), r.Code, r.Stdout, r.Stderr, want)
		}
	}
	// --count is bounded by the agent's maximum, not refused.
	if r := itest.Run(t, 30*time.Second, nil, "net", "rr", "--to", a.Addr, "--count", "100", "--duration", "1h"); r.Code != 0 {
		t.Fatalf("--count: exit %d: %s", r.Code, r.Stderr)
	}
}

func TestHelp(t *testing.T) {
	out, _, code := run(t, nil, "net", "stream", "--help")
	if code != 0 || !strings.Contains(out, "  --streams int") || !strings.Contains(out, "  --window") {
		t.Fatalf("help: code %d out %q", code, out)
	}
	out, _, code = run(t, nil, "help")
	if code != 0 || !strings.Contains(out, "net rr") || !strings.Contains(out, "serve") {
		t.Fatalf("help: code %d out %q", code, out)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "narrows "+cli.Version) || !strings.Contains(out, "protocol 1") || !strings.Contains(out, "commit ") {
		t.Fatalf("version: code %d out %q", code, out)
	}
	for _, flag := range []string{"--version", "-version"} {
		if again, _, code := run(t, nil, flag); code != 0 || again != out {
			t.Errorf("narrows %s: exit %d, %q; want %q as narrows version says it", flag, code, again, out)
		}
	}
}

// TestNewcomerStartsAtDoctor: narrows alone, and its help, lead with
// doctor and the README's four commands; `narrows help CMD` is the
// command's own help (issue 27: it printed the list).
func TestNewcomerStartsAtDoctor(t *testing.T) {
	_, stderr, code := run(t, nil)
	if code != cli.ExitUsage || !strings.Contains(stderr, "narrows doctor --to HOST") {
		t.Errorf("narrows alone: exit %d, %q; want exit 2 pointing at doctor", code, stderr)
	}
	out, _, code := run(t, nil, "--help")
	recipe, list := strings.Index(out, "narrows doctor --to STANDBY"), strings.Index(out, "Usage: narrows COMMAND")
	if code != 0 || recipe < 0 || list < recipe || !strings.Contains(out, "narrows serve --secret-file") || !strings.Contains(out, "narrows compare") {
		t.Errorf("narrows --help: exit %d; want the four commands before the list:\n%s", code, out)
	}
	if lines := strings.Split(out[list:], "\n"); len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "doctor ") {
		t.Errorf("the list does not start with doctor:\n%s", out[list:])
	}
	for _, words := range [][]string{{"doctor"}, {"net", "stream"}, {"plan", "backup"}} {
		out, stderr, code := run(t, nil, append([]string{"help"}, words...)...)
		if code != 0 || stderr != "" || !strings.HasPrefix(out, "Usage: narrows "+strings.Join(words, " ")+" [flags]") {
			t.Errorf("narrows help %s: exit %d, stderr %q, stdout %.80q", strings.Join(words, " "), code, stderr, out)
		}
	}
	if _, stderr, code := run(t, nil, "help", "nosuch"); code != cli.ExitUsage || !strings.Contains(stderr, `unknown command "nosuch"`) {
		t.Errorf("narrows help nosuch: exit %d, %q", code, stderr)
	}
}

// jsonLines parses --json output: interval records, then one summary last.
func jsonLines(t *testing.T, out string) (intervals []map[string]any, summary map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		if m["schema"] != "narrows/v1" {
			t.Fatalf("record without schema: %q", sc.Text())
		}
		switch m["type"] {
		case "interval":
			if summary != nil {
				t.Fatal("interval after the summary")
			}
			intervals = append(intervals, m)
		case "summary":
			summary = m
		default:
			t.Fatalf("unknown record type in %q", sc.Text())
		}
	}
	if summary == nil {
		t.Fatalf("no summary record in:\n%s", out)
	}
	return intervals, summary
}

func num(t *testing.T, m map[string]any, path ...string) float64 {
	t.Helper()
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: %q is not an object", path, p)
		}
		v = mm[p]
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%v = %v, want a number", path, v)
	}
	return f
}

func TestStreamAndRRJSON(t *testing.T) {
	a := itest.StartAgent(t, nil)
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, iv []map[string]any, s map[string]any)
	}{
		{"stream one stream", []string{"net", "stream", "--duration", "2s", "--interval", "500ms"}, func(t *testing.T, iv []map[string]any, s map[string]any) {
			if len(iv) < 3 {
				t.Fatalf("%d interval records for 2s at 500ms", len(iv))
			}
			if bps := num(t, s, "stream", "throughput_bits_per_second"); bps < 1e8 {
				t.Fatalf("loopback throughput %v bit/s", bps)
			}
			run := s["stream"].(map[string]any)["runs"].([]any)[0].(map[string]any)
			if run["received_bytes"].(float64) <= 0 || run["received_bytes"].(float64) > run["sent_bytes"].(float64) {
				t.Fatalf("received %v of %v sent", run["received_bytes"], run["sent_bytes"])
			}
			if _, ok := run["tcp"].(map[string]any)["min_rtt_seconds"]; !ok {
				t.Fatal("no TCP_INFO figures on Linux")
			}
			// The rows add up to the summary, the last stretch included.
			var rows float64
			for _, i := range iv {
				b, _ := i["bytes"].(float64) // a row in which nothing arrived has none
				rows += b
			}
			if rows != run["received_bytes"].(float64) {
				t.Fatalf("interval rows carry %.0f bytes, the summary %.0f", rows, run["received_bytes"])
			}
		}},
		{"stream compares one with N", []string{"net", "stream", "--duration", "1s", "--streams", "3", "--reverse"}, func(t *testing.T, iv []map[string]any, s map[string]any) {
			st := s["stream"].(map[string]any)
			runs := st["runs"].([]any)
			if len(runs) != 2 || runs[0].(map[string]any)["phase"] != "single" || runs[1].(map[string]any)["streams"].(float64) != 3 {
				t.Fatalf("runs: %v", runs)
			}
			if r := num(t, st, "comparison", "aggregate_to_single_ratio"); r <= 0 {
				t.Fatalf("ratio %v", r)
			}
			if runs[0].(map[string]any)["direction"] != "reverse" {
				t.Fatal("direction not reverse")
			}
		}},
		{"stream bidir", []string{"net", "stream", "--duration", "1s", "--bidir"}, func(t *testing.T, iv []map[string]any, s map[string]any) {
			runs := s["stream"].(map[string]any)["runs"].([]any)
			if len(runs) != 2 || runs[0].(map[string]any)["direction"] == runs[1].(map[string]any)["direction"] {
				t.Fatalf("bidir runs: %v", runs)
			}
			for _, r := range runs {
				if r.(map[string]any)["throughput_bits_per_second"].(float64) <= 0 {
					t.Fatalf("a direction moved nothing: %v", r)
				}
			}
		}},
		{"rr by count with a 500-byte request", []string{"net", "rr", "--count", "2000", "--request", "500B", "--response", "1K"}, func(t *testing.T, iv []map[string]any, s map[string]any) {
			r := s["rr"].(map[string]any)
			if r["round_trips"].(float64) != 2000 {
				t.Fatalf("round trips %v, want 2000", r["round_trips"])
			}
			p50, p99, mx := num(t, r, "rtt_p50_seconds"), num(t, r, "rtt_p99_seconds"), num(t, r, "rtt_max_seconds")
			if !(p50 > 0 && p50 <= p99 && p99 <= mx) || num(t, r, "round_trips_per_second") <= 0 || num(t, r, "connect_seconds") <= 0 {
				t.Fatalf("rr figures out of order: %v", r)
			}
		}},
		{"rr paced", []string{"net", "rr", "--duration", "1s", "--rate", "200"}, func(t *testing.T, iv []map[string]any, s map[string]any) {
			rate := num(t, s, "rr", "round_trips_per_second")
			if rate < 180 || rate > 210 {
				t.Fatalf("paced at 200/s, measured %v/s", rate)
			}
			// The pace is what was asked for, not the path's ceiling.
			f := s["findings"].([]any)[0].(map[string]any)
			if d := f["detail"].(string); strings.Contains(d, "is the ceiling") || !strings.Contains(d, "paced at 200 round trips per second (--rate)") {
				t.Fatalf("paced run's finding: %q", d)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := itest.Run(t, 60*time.Second, nil, append(append(c.args, "--to", a.Addr), "--json")...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			iv, s := jsonLines(t, r.Stdout)
			if s["partial"] != false {
				t.Fatalf("partial run: %v", s["error"])
			}
			if _, ok := s["unauthenticated"]; ok {
				t.Fatal("figures from an agent that proved its secret marked unauthenticated")
			}
			if f, ok := s["findings"].([]any); !ok || len(f) == 0 {
				t.Fatal("no findings")
			}
			c.check(t, iv, s)
		})
	}
}

// TestUnauthenticatedAgent: an agent without a secret (a stand-in, as far
// as the client can tell) is refused with one line and exit 2 unless the
// client itself says --insecure, and then its figures are marked.
func TestUnauthenticatedAgent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- agent.New(agent.Config{Insecure: true}).Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	addr := ln.Addr().String()
	secret := map[string]string{"NARROWS_SECRET": itest.Secret}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string // on stderr when refused, on stdout when run
	}{
		{"client with a secret", secret, []string{"net", "rr"}, cli.ExitUsage, "does not authenticate"},
		{"client with a secret, stream", secret, []string{"net", "stream"}, cli.ExitUsage, "does not authenticate"},
		{"client without a secret", nil, []string{"net", "rr"}, cli.ExitUsage, "pass --insecure"},
		{"--insecure, table", nil, []string{"net", "rr", "--insecure"}, 0, "UNAUTHENTICATED"},
		{"--insecure, JSON", nil, []string{"net", "rr", "--insecure", "--json"}, 0, `"unauthenticated":true`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, c.env, append(c.args, "--to", addr, "--duration", "300ms", "--interval", "100ms")...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			if c.code != 0 {
				if stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
					t.Fatalf("want one line containing %q and no figures; stdout %q stderr %q", c.want, stdout, stderr)
				}
				return
			}
			if !strings.Contains(stdout, c.want) {
				t.Fatalf("output lacks %q:\n%s", c.want, stdout)
			}
		})
	}
}

// TestStreamsBeyondTheAgentsLimits: a test needing more data connections
// than the agent allows (its --max-conns, or what one report frame carries)
// is refused before anything runs, in words, with exit 2.
func TestStreamsBeyondTheAgentsLimits(t *testing.T) {
	secret := map[string]string{"NARROWS_SECRET": itest.Secret}
	cases := []struct {
		name     string
		maxConns int
		args     []string
		want     string
		maxMem   int64
	}{
		{"bidir beyond --max-test-memory", 64, []string{"--streams", "31", "--bidir", "--block", "16M"}, "--streams 31 (bidir) of 16 MiB blocks needs 140 MiB of buffers on the agent at ADDR, which allows 64 MiB per test (its --max-test-memory): use --streams 12 or fewer, or a smaller --block", 64 << 20},
		{"more streams than --max-conns", 64, []string{"--streams", "64"}, "needs 64 data connections; the agent at ADDR allows 63 per test: use --streams 63 or fewer", 0},
		{"bidir beyond --max-conns", 64, []string{"--streams", "40", "--bidir"}, "needs 80 data connections; the agent at ADDR allows 63 per test: use --streams 31 or fewer", 0},
		{"bidir beyond one report frame", 1000, []string{"--streams", "90", "--bidir"}, fmt.Sprintf("needs 180 data connections; the agent at ADDR allows %d per test", wire.MaxSlots), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() {
				served <- agent.New(agent.Config{Secret: []byte(itest.Secret), MaxConns: c.maxConns, MaxTestMemory: c.maxMem}).Serve(ctx, ln)
			}()
			defer func() { cancel(); <-served }()
			c.want = strings.Replace(c.want, "ADDR", ln.Addr().String(), 1)
			stdout, stderr, code := run(t, secret, append([]string{"net", "stream", "--to", ln.Addr().String(), "--duration", "1s"}, c.args...)...)
			if code != cli.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and one line containing %q", code, stderr, c.want)
			}
			if strings.Contains(stdout, "strm") {
				t.Fatalf("measured before refusing:\n%s", stdout)
			}
		})
	}
}

// runAgentKilled runs narrows with args and kills agent a after a while:
// the client must notice and end within 30 s.
func runAgentKilled(t *testing.T, a *itest.Agent, after time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(itest.Binary(t), args...)
	cmd.Env = append(os.Environ(), "NARROWS_SECRET="+itest.Secret)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(after)
	a.Cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("client did not notice the agent died")
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestPartialResultsWhenAgentDies: a run that fails mid-way still prints
// what it measured, marks it partial, and exits 1.
func TestPartialResultsWhenAgentDies(t *testing.T) {
	a := itest.StartAgent(t, nil)
	out, stderr, code := runAgentKilled(t, a, 1500*time.Millisecond, "net", "rr", "--to", a.Addr, "--duration", "20s", "--interval", "200ms", "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr)
	}
	iv, s := jsonLines(t, out)
	if len(iv) < 3 || s["partial"] != true || s["error"] == "" {
		t.Fatalf("%d intervals, partial %v error %v", len(iv), s["partial"], s["error"])
	}
	if num(t, s, "rr", "round_trips") <= 0 {
		t.Fatal("the partial summary lost what was measured")
	}
}

// TestInterruptKeepsResults: SIGINT ends the run early with its figures.
func TestInterruptKeepsResults(t *testing.T) {
	a := itest.StartAgent(t, nil)
	cmd := exec.Command(itest.Binary(t), "net", "stream", "--to", a.Addr, "--duration", "30s")
	cmd.Env = append(os.Environ(), "NARROWS_SECRET="+itest.Secret)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("SIGINT did not end the run")
	}
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, cli.ExitInterrupted)
	}
	for _, want := range []string{"→ agent", "stopped: interrupted", "PARTIAL", "One stream (forward) carried"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestFactsInReport: a run's summary names both ends: this host's facts,
// its interface the one routing to the agent, and the agent's host's as
// its Welcome told them.
func TestFactsInReport(t *testing.T) {
	a := itest.StartAgent(t, nil)
	r := itest.Run(t, 60*time.Second, nil, "net", "rr", "--count", "200", "--to", a.Addr, "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	_, s := jsonLines(t, r.Stdout)
	for _, end := range []string{"facts", "agent_facts"} {
		f, ok := s[end].(map[string]any)
		if !ok {
			t.Fatalf("no %s in the summary", end)
		}
		if f["os"] != runtime.GOOS || f["cores"].(float64) < 1 || f["narrows_version"] == "" {
			t.Errorf("%s: %v", end, f)
		}
		nics, _ := f["interfaces"].([]any)
		if slow := strings.Contains(fmt.Sprint(f["missing"]), "took longer than"); runtime.GOOS == "linux" && !slow && (len(nics) != 1 || nics[0].(map[string]any)["mtu"].(float64) != 65536) {
			t.Errorf("%s: the route over 127.0.0.1 is loopback, MTU 65536: %v", end, nics)
		}
	}
}

// TestMistakeLeavesStdoutAlone: a mistaken flag is one line on stderr and
// nothing on standard output (the flag package would print the whole flag
// list there, into a --json run's records); --help still lists them.
func TestMistakeLeavesStdoutAlone(t *testing.T) {
	for _, cmd := range [][]string{{"net", "rr"}, {"plan", "sync"}, {"report"}, {"compare"}, {"doctor"}} {
		stdout, stderr, code := run(t, nil, append(cmd, "--bogus")...)
		if code != cli.ExitUsage || stdout != "" || !strings.Contains(stderr, "--help lists its flags") {
			t.Errorf("%v --bogus: exit %d, stdout %q, stderr %q", cmd, code, stdout, stderr)
		}
		if stdout, _, code := run(t, nil, append(cmd, "--help")...); code != cli.ExitOK || !strings.Contains(stdout, "Usage: narrows") || !strings.Contains(stdout, "  --") {
			t.Errorf("%v --help: exit %d:\n%s", cmd, code, stdout)
		}
	}
}

// manyHosts is a --to list of n hosts.
func manyHosts(n int) string {
	h := make([]string, n)
	for i := range h {
		h[i] = fmt.Sprintf("db%d", i)
	}
	return strings.Join(h, ",")
}
