#!/usr/bin/env bash
# bench/db.sh: narrows db against the reference tool, side by side, on loopback.
#
#   queries per second, one session, SELECT 1, simple protocol:
#       narrows db ping --duration N   vs   pgbench -n -c1 -T N -M simple -f select1.sql
#   the same against MariaDB, one connection:
#       narrows db ping --duration N   vs   mariadb-slap --concurrency=1 --number-of-queries=Q --query='SELECT 1'
#       (Q = N seconds at narrows' last rate; mariadb-slap sends each query
#       and reads its result, as narrows does; the mariadb client in batch
#       mode also parses and prints every row, so it is no peer for a
#       round trip)
#   the watcher's own cost on the database server, one poll per second:
#       CPU time of every PostgreSQL process of the primary (and of the
#       standby) over WATCH seconds with `narrows db repl --interval 1s`
#       running, against the same window without it.
#
# A throwaway PostgreSQL primary and streaming standby, and a MariaDB
# server, are made from the Debian packages in a temporary directory on
# loopback ports (as root they run as the postgres and mysql users), and
# removed at the end. Rounds alternate which
# tool goes first; medians are compared.
#
#   ROUNDS=5 DURATION=5 WATCH=20 bash bench/db.sh     (the defaults; part of `make bench`)
#
# Exits 0 whether or not the targets are met (a measurement, not a test);
# non-zero if a tool failed to start or run.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
WATCH=${WATCH:-20}
for v in ROUNDS DURATION WATCH; do
	case ${!v} in '' | *[!0-9]* | 0) echo "db.sh: $v must be a positive whole number, not '${!v}'" >&2; exit 2 ;; esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export NARROWS_BENCH_LIB=$ROOT/bench # bench/contention.py: what other processes' CPU means
OUT_DIR=$ROOT/bench/out
OUT_JSON=$OUT_DIR/db.json

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n | tail -n 1 || true)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/pgbench" ]; then
	echo "db.sh: PostgreSQL not found under /usr/lib/postgresql/*/bin (Debian: apt-get install -y postgresql postgresql-contrib)" >&2
	exit 1
fi
for tool in go python3; do
	command -v "$tool" >/dev/null 2>&1 || { echo "db.sh: '$tool' not found" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/narrows-dbbench.XXXXXX")
chmod 755 "$WORK"
AS=()
if [ "$(id -u)" = 0 ]; then
	chown postgres "$WORK"
	AS=(runuser -u postgres --)
fi
PRIMARY=$WORK/primary
STANDBY=$WORK/standby
mkdir -p "$WORK/sock1" "$WORK/sock2"
[ "$(id -u)" = 0 ] && chown postgres "$WORK/sock1" "$WORK/sock2"

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -f "$WORK/maria/pid" ]; then
		kill "$(cat "$WORK/maria/pid")" 2>/dev/null || true
		for _ in $(seq 1 50); do [ -f "$WORK/maria/pid" ] || break; sleep 0.1; done
	fi
	for d in "$STANDBY" "$PRIMARY"; do
		if [ -f "$d/postmaster.pid" ]; then
			"${AS[@]}" "$PGBIN/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
		fi
	done
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "db.sh: interrupted" >&2; exit 130' INT
trap 'echo "db.sh: terminated" >&2; exit 143' TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
P1=$(free_port)
P2=$(free_port)
PW=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
echo "$PW" >"$WORK/pw"
[ "$(id -u)" = 0 ] && chown postgres "$WORK/pw"

echo "db.sh: building narrows ..."
BIN=$WORK/narrows
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$BIN" ./cmd/narrows)

echo "db.sh: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') primary on 127.0.0.1:$P1, standby on :$P2 ..."
"${AS[@]}" "$PGBIN/initdb" -D "$PRIMARY" -U postgres --pwfile "$WORK/pw" -A scram-sha-256 --auth-local trust --no-sync >"$WORK/initdb.log" 2>&1
cat >>"$PRIMARY/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $P1
unix_socket_directories = '$WORK/sock1'
wal_level = replica
max_wal_senders = 4
shared_buffers = '64MB'
log_min_messages = warning
EOF
"${AS[@]}" "$PGBIN/pg_ctl" -D "$PRIMARY" -l "$WORK/primary.log" -w start >/dev/null
"${AS[@]}" env PGPASSWORD="$PW" "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$P1" -U postgres -D "$STANDBY" -R -X stream -c fast --no-sync
cat >>"$STANDBY/postgresql.auto.conf" <<EOF
port = $P2
unix_socket_directories = '$WORK/sock2'
cluster_name = 'standby1'
EOF
"${AS[@]}" "$PGBIN/pg_ctl" -D "$STANDBY" -l "$WORK/standby.log" -w start >/dev/null
DSN="postgres://postgres:$PW@127.0.0.1:$P1/postgres?sslmode=disable"
SDSN="postgres://postgres:$PW@127.0.0.1:$P2/postgres?sslmode=disable"
echo "SELECT 1;" >"$WORK/select1.sql"
for i in $(seq 1 50); do
	n=$("${AS[@]}" "$PGBIN/psql" -X -At -h "$WORK/sock1" -p "$P1" -U postgres -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" postgres 2>/dev/null || echo 0)
	[ "$n" = 1 ] && break
	sleep 0.2
done

RESULTS=$WORK/results.jsonl
: >"$RESULTS"
FAILURES=0
BUSY=0.25 # cores used by other processes that make a run unfair

# cluster.py DATADIR|PIDFILE: the CPU time, in clock ticks, of a server's
# processes: the postmaster (DATADIR/postmaster.pid; or the process a pid
# file names, mariadbd) with its reaped children, plus every live child.
# Imported by measured.py too.
cat >"$WORK/cluster.py" <<'PY'
import os, sys
def cluster_ticks(datadir):
    f = datadir if os.path.isfile(datadir) else os.path.join(datadir, "postmaster.pid")
    pid = int(open(f).readline())
    def fields(p):
        d = open("/proc/%d/stat" % p).read()
        return d[d.rindex(")") + 2:].split()
    f = fields(pid)
    total = int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # utime stime cutime cstime
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            g = fields(int(p))
        except OSError:
            continue
        if int(g[1]) == pid:
            total += int(g[11]) + int(g[12])
    return total
if __name__ == "__main__":
    print(cluster_ticks(sys.argv[1]))
PY

# measured META DATADIR OUT CMD...: runs CMD (stdout to OUT), and records
# how many cores everything else on the machine used meanwhile: the
# machine's busy time less CMD's own CPU and the server's. Loopback round
# trips are CPU-bound, so a run that shared the CPU is not a fair one.
cat >"$WORK/measured.py" <<'PY'
import json, os, resource, subprocess, sys, time
meta, datadir, out = sys.argv[1:4]
cmd = sys.argv[4:]
sys.path.insert(0, os.environ["NARROWS_BENCH_LIB"])
from contention import busy_ticks as busy
from cluster import cluster_ticks
hz = os.sysconf("SC_CLK_TCK")
b0, c0, r0, w0 = busy(), cluster_ticks(datadir), resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
with open(out, "w") as fo:
    rc = subprocess.call(cmd, stdout=fo, stderr=subprocess.STDOUT)
wall = time.monotonic() - w0
b1, c1, r1 = busy(), cluster_ticks(datadir), resource.getrusage(resource.RUSAGE_CHILDREN)
own = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
other = max(0.0, (b1 - b0) / hz - (c1 - c0) / hz - own) / wall
json.dump({"rc": rc, "wall_seconds": wall, "own_cpu_seconds": own, "server_cpu_seconds": (c1 - c0) / hz, "other_cpu_cores": other}, open(meta, "w"))
sys.exit(rc)
PY

run_narrows() {
	if python3 "$WORK/measured.py" "$WORK/meta" "$PRIMARY" "$WORK/narrows.out" "$BIN" db ping --dsn "$DSN" --duration "${DURATION}s" --json; then
		python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1])["db_ping"]; m=json.load(open(sys.argv[2])); print(json.dumps({"tool":"narrows","qps":d["queries_per_second"],"p50":d["rtt_p50_seconds"],"round":int(sys.argv[3]),"pos":int(sys.argv[4]),"other_cpu_cores":m["other_cpu_cores"],"own_cpu_seconds":m["own_cpu_seconds"]}))' "$WORK/narrows.out" "$WORK/meta" "$1" "$2" >>"$RESULTS"
	else
		echo "  narrows FAILED: $(tail -n 3 "$WORK/narrows.out")"
		FAILURES=$((FAILURES + 1))
		return 1
	fi
}
run_pgbench() {
	if PGPASSWORD=$PW python3 "$WORK/measured.py" "$WORK/meta" "$PRIMARY" "$WORK/pgbench.out" "$PGBIN/pgbench" -n -c1 -T "$DURATION" -M simple -f "$WORK/select1.sql" -h 127.0.0.1 -p "$P1" -U postgres postgres; then
		python3 -c 'import json,re,sys; t=open(sys.argv[1]).read(); m=json.load(open(sys.argv[2])); print(json.dumps({"tool":"pgbench","qps":float(re.search(r"tps = ([0-9.]+)",t).group(1)),"round":int(sys.argv[3]),"pos":int(sys.argv[4]),"other_cpu_cores":m["other_cpu_cores"],"own_cpu_seconds":m["own_cpu_seconds"]}))' "$WORK/pgbench.out" "$WORK/meta" "$1" "$2" >>"$RESULTS"
	else
		echo "  pgbench FAILED: $(tail -n 3 "$WORK/pgbench.out")"
		FAILURES=$((FAILURES + 1))
		return 1
	fi
}
show() { tail -n 1 "$RESULTS" | python3 -c 'import json,sys; r=json.load(sys.stdin); o=r["other_cpu_cores"]; print("  round %d %-8s %10.0f queries/s  (other processes: %.2f cores%s)" % (r["round"], r["tool"], r["qps"], o, ", BUSY" if o > float(sys.argv[1]) else ""))' "$BUSY"; }

echo "db.sh: (a) $ROUNDS round(s) of ${DURATION}s each: narrows db ping vs pgbench -n -c1 -M simple, SELECT 1"
# warm-up, thrown away
"$BIN" db ping --dsn "$DSN" --duration 1s --json >/dev/null 2>&1 || true
PGPASSWORD=$PW "$PGBIN/pgbench" -n -c1 -T 1 -M simple -f "$WORK/select1.sql" -h 127.0.0.1 -p "$P1" -U postgres postgres >/dev/null 2>&1 || true
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then
		run_narrows "$r" 1 && show
		run_pgbench "$r" 2 && show
	else
		run_pgbench "$r" 1 && show
		run_narrows "$r" 2 && show
	fi
done

# (a2) MariaDB: narrows db ping vs mariadb-slap, one connection each.
MARIADBD=$(command -v mariadbd || { [ -x /usr/sbin/mariadbd ] && echo /usr/sbin/mariadbd; } || true)
if [ -n "$MARIADBD" ] && command -v mariadb-install-db >/dev/null 2>&1 && command -v mariadb-slap >/dev/null 2>&1; then
	M=$WORK/maria
	MP=$(free_port)
	mkdir -p "$M"
	MUSER=()
	[ "$(id -u)" = 0 ] && { chown mysql "$M"; MUSER=(--user=mysql); }
	mariadb-install-db --no-defaults --datadir="$M/data" --auth-root-authentication-method=socket --skip-test-db "${MUSER[@]}" >"$WORK/maria-install.log" 2>&1
	"$MARIADBD" --no-defaults --datadir="$M/data" --port="$MP" --bind-address=127.0.0.1 --socket="$M/sock" --pid-file="$M/pid" \
		--log-error="$M/error.log" --skip-name-resolve --innodb-buffer-pool-size=64M --performance-schema=OFF "${MUSER[@]}" >/dev/null 2>&1 &
	for _ in $(seq 1 100); do mariadb --no-defaults -uroot --socket="$M/sock" -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
	mariadb --no-defaults -uroot --socket="$M/sock" -e "CREATE DATABASE narrows; CREATE USER 'narrows'@'127.0.0.1' IDENTIFIED BY '$PW'; GRANT ALL ON narrows.* TO 'narrows'@'127.0.0.1';"
	MDSN="mysql://narrows:$PW@127.0.0.1:$MP/narrows"
	echo "db.sh: (a2) $ROUNDS round(s) of ${DURATION}s each against MariaDB $("$MARIADBD" --version | awk '{print $3}') on 127.0.0.1:$MP: narrows db ping vs mariadb-slap --concurrency=1, SELECT 1"
	MQ=1000 # queries per mariadb-slap run: DURATION seconds at narrows' last rate
	run_narrows_maria() {
		if python3 "$WORK/measured.py" "$WORK/meta" "$M/pid" "$WORK/narrows.out" "$BIN" db ping --dsn "$MDSN" --duration "${DURATION}s" --json; then
			python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1])["db_ping"]; m=json.load(open(sys.argv[2])); print(json.dumps({"tool":"narrows-mariadb","qps":d["queries_per_second"],"round":int(sys.argv[3]),"pos":int(sys.argv[4]),"other_cpu_cores":m["other_cpu_cores"],"own_cpu_seconds":m["own_cpu_seconds"]}))' "$WORK/narrows.out" "$WORK/meta" "$1" "$2" >>"$RESULTS"
			MQ=$(tail -n 1 "$RESULTS" | python3 -c "import json,sys; print(max(1000, int(json.load(sys.stdin)['qps'] * $DURATION)))")
		else
			echo "  narrows FAILED: $(tail -n 3 "$WORK/narrows.out")"
			FAILURES=$((FAILURES + 1))
			return 1
		fi
	}
	run_slap() {
		if MYSQL_PWD=$PW python3 "$WORK/measured.py" "$WORK/meta" "$M/pid" "$WORK/slap.out" mariadb-slap --no-defaults --protocol=tcp -h127.0.0.1 -P"$MP" -unarrows \
			--create-schema=narrows --no-drop --concurrency=1 --iterations=1 --number-of-queries="$MQ" --query='SELECT 1'; then
			python3 -c 'import json,re,sys; t=open(sys.argv[1]).read(); m=json.load(open(sys.argv[2])); s=float(re.search(r"run all queries: ([0-9.]+) seconds",t).group(1)); print(json.dumps({"tool":"mariadb-slap","qps":int(sys.argv[5])/s,"round":int(sys.argv[3]),"pos":int(sys.argv[4]),"other_cpu_cores":m["other_cpu_cores"],"own_cpu_seconds":m["own_cpu_seconds"]}))' "$WORK/slap.out" "$WORK/meta" "$1" "$2" "$MQ" >>"$RESULTS"
		else
			echo "  mariadb-slap FAILED: $(tail -n 3 "$WORK/slap.out")"
			FAILURES=$((FAILURES + 1))
			return 1
		fi
	}
	run_narrows_maria 0 0 >/dev/null; sed -i '$d' "$RESULTS" # warm-up, thrown away (it sets MQ)
	for r in $(seq 1 "$ROUNDS"); do
		if [ $((r % 2)) = 1 ]; then
			run_narrows_maria "$r" 1 && show
			run_slap "$r" 2 && show
		else
			run_slap "$r" 1 && show
			run_narrows_maria "$r" 2 && show
		fi
	done
else
	echo "db.sh: (a2) skipped: mariadbd, mariadb-install-db or mariadb-slap not found (Debian: apt-get install -y mariadb-server mariadb-client)"
fi

# (b) the watcher's cost: CPU time of a cluster's processes over WATCH seconds.
cluster_ticks() { python3 "$WORK/cluster.py" "$1"; } # cluster_ticks DATADIR
HZ=$(getconf CLK_TCK)
watch_window() { # watch_window on|off ROUND
	local p0 s0 p1 s1 wpid=
	p0=$(cluster_ticks "$PRIMARY")
	s0=$(cluster_ticks "$STANDBY")
	if [ "$1" = on ]; then
		"$BIN" db repl --dsn "$DSN" --replica-dsn "standby1=$SDSN" --interval 1s --duration "${WATCH}s" --json >"$WORK/repl.out" 2>"$WORK/repl.err" &
		wpid=$!
	fi
	sleep "$WATCH"
	if [ -n "$wpid" ]; then
		wait "$wpid" || { echo "  db repl FAILED: $(cat "$WORK/repl.err")"; FAILURES=$((FAILURES + 1)); }
	fi
	p1=$(cluster_ticks "$PRIMARY")
	s1=$(cluster_ticks "$STANDBY")
	echo "{\"tool\":\"watch-$1\",\"round\":$2,\"primary_cpu_seconds\":$(python3 -c "print(($p1-$p0)/$HZ)"),\"standby_cpu_seconds\":$(python3 -c "print(($s1-$s0)/$HZ)"),\"seconds\":$WATCH}" >>"$RESULTS"
	tail -n 1 "$RESULTS" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  round %d watcher %-3s primary %.2f%% of a core, standby %.2f%%" % (r["round"], r["tool"][6:], 100*r["primary_cpu_seconds"]/r["seconds"], 100*r["standby_cpu_seconds"]/r["seconds"]))'
}
WR=$(( ROUNDS < 3 ? ROUNDS : 3 ))
echo "db.sh: (b) the watcher's cost on the servers: $WR x (${WATCH}s without, ${WATCH}s with db repl --interval 1s)"
for r in $(seq 1 "$WR"); do
	if [ $((r % 2)) = 1 ]; then watch_window off "$r"; watch_window on "$r"; else watch_window on "$r"; watch_window off "$r"; fi
done

mkdir -p "$OUT_DIR"
python3 - "$RESULTS" "$OUT_JSON" "$ROUNDS" "$DURATION" "$WATCH" "$("$BIN" version)" "$("$PGBIN/pgbench" --version)" "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" "$BUSY" <<'PY'
import json, os, statistics, sys, time
res, out, rounds, duration, watch, vn, vp, commit = sys.argv[1:9]
BUSY = float(sys.argv[9])  # cores used by other processes that make a run unfair
rs = [json.loads(l) for l in open(res) if l.strip()]
def med(v):
    return statistics.median(v) if v else None
def runs(tool):
    return {r["round"]: r for r in rs if r["tool"] == tool}
def compare(a, b):
    """Medians of tool a against tool b over the rounds both ran, fair ones only if any."""
    ar, br = runs(a), runs(b)
    both = sorted(set(ar) & set(br))
    fair = [k for k in both if ar[k]["other_cpu_cores"] <= BUSY and br[k]["other_cpu_cores"] <= BUSY]
    use = fair if fair else both
    n = [ar[k]["qps"] for k in use]
    p = [br[k]["qps"] for k in use]
    return {"n": n, "p": p, "ratio": med(n) / med(p) if n and p else None, "use": use, "fair": fair,
            "per_round": [ar[k]["qps"] / br[k]["qps"] for k in both], "busy": [k for k in both if k not in fair]}
pg = compare("narrows", "pgbench")
my = compare("narrows-mariadb", "mariadb-slap")
n, p, ratio, use, fair, per_round, busy_rounds = pg["n"], pg["p"], pg["ratio"], pg["use"], pg["fair"], pg["per_round"], pg["busy"]
on = [r for r in rs if r["tool"] == "watch-on"]
off = [r for r in rs if r["tool"] == "watch-off"]
def pct(rows, k):
    return med([100 * r[k] / r["seconds"] for r in rows])
cost_p = pct(on, "primary_cpu_seconds") - pct(off, "primary_cpu_seconds") if on and off else None
cost_s = pct(on, "standby_cpu_seconds") - pct(off, "standby_cpu_seconds") if on and off else None
print()
print("narrows db ping vs pgbench -c1 -M simple (SELECT 1, one session), medians of %d %s rounds of %ss:" % (
    len(use), "fair" if fair else "(all busy: none fair)", duration))
print("  narrows %.0f queries/s, pgbench %.0f queries/s: ratio %.3f (target >= 1.0: %s); per round: %s" % (
    med(n), med(p), ratio, "MET" if ratio >= 1.0 else "NOT MET", ", ".join("%.3f" % x for x in per_round)))
if busy_rounds and fair:
    print("  rounds %s left out: other processes used over %.2f cores" % (busy_rounds, BUSY))
elif busy_rounds:
    print("  every round was BUSY (other processes used over %.2f cores): the ratio is unreliable; rerun on a quiet machine" % BUSY)
if my["ratio"] is not None:
    print("narrows db ping vs mariadb-slap --concurrency=1 (SELECT 1, one connection), medians of %d %s rounds of %ss:" % (
        len(my["use"]), "fair" if my["fair"] else "(all busy: none fair)", duration))
    print("  narrows %.0f queries/s, mariadb-slap %.0f queries/s: ratio %.3f (target >= 1.0: %s); per round: %s" % (
        med(my["n"]), med(my["p"]), my["ratio"], "MET" if my["ratio"] >= 1.0 else "NOT MET", ", ".join("%.3f" % x for x in my["per_round"])))
    if my["busy"]:
        print("  rounds %s %s: other processes used over %.2f cores" % (my["busy"], "left out" if my["fair"] else "BUSY (all of them)", BUSY))
if cost_p is not None:
    print("the watcher (db repl --interval 1s, with --replica-dsn) on the servers, medians of %d windows of %ss:" % (len(on), watch))
    print("  primary: %.3f%% -> %.3f%% of a core = +%.3f%%; standby: +%.3f%% (target < 1%%: %s)" % (
        pct(off, "primary_cpu_seconds"), pct(on, "primary_cpu_seconds"), cost_p, cost_s, "MET" if cost_p < 1 and cost_s < 1 else "NOT MET"))
doc = {"schema": "narrows-bench-db/v1", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
       "config": {"rounds": int(rounds), "duration_seconds": int(duration), "watch_seconds": int(watch),
                  "narrows": "narrows db ping --duration %ss --json" % duration,
                  "peer": "pgbench -n -c1 -T %s -M simple -f select1.sql (SELECT 1;)" % duration,
                  "watcher": "narrows db repl --interval 1s --replica-dsn standby1=... (primary and standby CPU measured from /proc)"},
       "machine": {"nproc": os.cpu_count(), "kernel": os.uname().release, "loadavg": open("/proc/loadavg").read().split()[:3]},
       "tools": {"narrows": vn, "pgbench": vp, "commit": commit},
       "queries_per_second": {"narrows_median": med(n), "pgbench_median": med(p), "ratio_narrows_over_pgbench": ratio,
                              "per_round_ratio": per_round, "rounds_used": use, "busy_rounds": busy_rounds,
                              "busy_threshold_cores": BUSY, "target_ratio_at_least": 1.0, "target_met": ratio is not None and ratio >= 1.0},
       "mariadb_queries_per_second": None if my["ratio"] is None else {
           "narrows_median": med(my["n"]), "mariadb_slap_median": med(my["p"]), "ratio_narrows_over_mariadb_slap": my["ratio"],
           "per_round_ratio": my["per_round"], "rounds_used": my["use"], "busy_rounds": my["busy"],
           "peer": "mariadb-slap --concurrency=1 --iterations=1 --number-of-queries=Q --query='SELECT 1' (Q = duration x narrows' last rate)",
           "target_ratio_at_least": 1.0, "target_met": my["ratio"] >= 1.0},
       "watcher_cost": {"primary_percent_of_core_added": cost_p, "standby_percent_of_core_added": cost_s,
                        "target_percent_below": 1.0, "target_met": cost_p is not None and cost_p < 1 and cost_s < 1},
       "runs": rs}
json.dump(doc, open(out, "w"), indent=2)
print("\nwrote %s" % out)
PY
[ "$FAILURES" = 0 ] || { echo "db.sh: $FAILURES run(s) failed" >&2; exit 1; }
