#!/usr/bin/env bash
# bench/wakeups.sh: what `narrows host` predicts idle CPUs waking add to a
# round trip, against what real clients gain when the CPUs are kept awake.
#
# A PostgreSQL and a MariaDB on loopback, in scratch directories. Each
# round runs pgbench -c 1 and then mariadb-slap --concurrency=1 (SELECT 1,
# simple protocol) with the CPUs as they are (pgbench 8 s, its last 3
# counted; slap after 5 s of settling, 40,000 queries), then both again
# with a CPU latency request of 0 held (/dev/cpu_dma_latency, as tuned's
# latency-performance profile holds it; pgbench 3 s, the last 2 counted;
# slap 50,000 queries to settle, 100,000 counted): a client's gain is its
# round's mean round trip as is less awake. Between every ROUNDS rounds,
# `narrows host` (this host only, DURATION seconds): its two threads are
# both here, so its round trip wakes two CPUs, as a loopback client and
# server's does. RUNS times; then each client's median gain over all its
# rounds, narrows' median prediction, and their ratios.
#
#   RUNS=3 ROUNDS=3 DURATION=40 bash bench/wakeups.sh
#
# Needs root (the request), a cpuidle driver that honours it, PostgreSQL
# and MariaDB. Run it on a machine otherwise quiet: narrows host says it
# cannot judge a busy one. Exits 0 whatever it reads.

RUNS=${RUNS:-3}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-40}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NAME=wakeups.sh
DIR=${TMPDIR:-/tmp}
. "$ROOT/bench/lib.sh"
positive RUNS ROUNDS DURATION
need postgresql mariadb-server mariadb-client python3 -- go python3 runuser mariadbd mariadb-install-db mariadb-slap mariadb
[ "$(id -u)" = 0 ] || { echo "$NAME: run as root: the CPU latency request needs it" >&2; exit 1; }
[ -w /dev/cpu_dma_latency ] || { echo "$NAME: /dev/cpu_dma_latency is not writable here" >&2; exit 1; }
[ -n "$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null)" ] ||
	{ echo "$NAME: no cpuidle driver: the request changes nothing here (narrows host spins idle-priority threads instead)" >&2; exit 1; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n | tail -n 1 || true)
[ -x "$PGBIN/pgbench" ] || { echo "$NAME: PostgreSQL not found under /usr/lib/postgresql/*/bin (Debian: apt-get install -y postgresql)" >&2; exit 1; }
scratch
chmod 755 "$WORK"

PIDS=() # the latency request's holder while it lives
on_exit() {
	stop_pids
	[ -f "$WORK/my/pid" ] && kill "$(cat "$WORK/my/pid")" 2>/dev/null
	[ -f "$WORK/pg/postmaster.pid" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg" -m immediate -w stop >/dev/null 2>&1
	for _ in $(seq 1 50); do [ -f "$WORK/my/pid" ] || break; sleep 0.1; done
}

echo "$NAME: building narrows" >&2
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/narrows" ./cmd/narrows)
export NARROWS_NO_HISTORY=1

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
PP=$(free_port)
MP=$(free_port)
mkdir -p "$WORK/pg" "$WORK/my"
chown postgres "$WORK/pg"
chown mysql "$WORK/my"
runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/pg" -U postgres -A trust --no-sync >"$WORK/initdb.log" 2>&1 ||
	{ cat "$WORK/initdb.log" >&2; exit 1; }
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg" -o "-p $PP -k $WORK/pg -c listen_addresses=127.0.0.1" -l "$WORK/pg/log" -w start >/dev/null
mariadb-install-db --no-defaults --datadir="$WORK/my/data" --user=mysql --auth-root-authentication-method=socket --skip-test-db >"$WORK/maria-install.log" 2>&1 ||
	{ cat "$WORK/maria-install.log" >&2; exit 1; }
mariadbd --no-defaults --datadir="$WORK/my/data" --user=mysql --port="$MP" --bind-address=127.0.0.1 --socket="$WORK/my/sock" --pid-file="$WORK/my/pid" \
	--log-error="$WORK/my/error.log" --skip-name-resolve --skip-log-bin --performance-schema=OFF >/dev/null 2>&1 &
for _ in $(seq 1 100); do mariadb --no-defaults -uroot --socket="$WORK/my/sock" -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
mariadb --no-defaults -uroot --socket="$WORK/my/sock" -e "CREATE DATABASE narrows; CREATE USER 'narrows'@'127.0.0.1'; GRANT ALL ON narrows.* TO 'narrows'@'127.0.0.1';"
echo "SELECT 1;" >"$WORK/select1.sql"

# awake / asleep: hold the CPU latency request of 0, and withdraw it.
awake() {
	python3 -c 'import os, struct, time
fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
os.write(fd, struct.pack("i", 0))
time.sleep(3600)' &
	PIDS=($!)
	sleep 0.2
}
asleep() { stop_pids; PIDS=(); }

# pgbench SECS LAST: µs a transaction, the mean of its last LAST seconds.
pgb() {
	"$PGBIN/pgbench" -n -c 1 -M simple -T "$1" -P 1 -f "$WORK/select1.sql" -h 127.0.0.1 -p "$PP" -U postgres postgres 2>&1 |
		python3 -c 'import re, sys
l = [float(m) for m in re.findall(r"progress: [0-9.]+ s, [0-9.]+ tps, lat ([0-9.]+) ms", sys.stdin.read())][-int(sys.argv[1]):]
print("%.1f" % (sum(l) / len(l) * 1e3))' "$2"
}
# slap N: µs a query over N queries.
slap() {
	mariadb-slap --no-defaults --protocol=tcp -h127.0.0.1 -P"$MP" -unarrows --create-schema=narrows --no-drop --concurrency=1 --iterations=1 \
		--number-of-queries="$1" --query='SELECT 1' 2>&1 |
		python3 -c 'import re, sys
print("%.1f" % (float(re.search(r"Average number of seconds to run all queries: ([0-9.]+)", sys.stdin.read()).group(1)) / int(sys.argv[1]) * 1e6))' "$1"
}

GAINS=$WORK/gains
: >"$GAINS"
echo "$NAME: $(nproc) CPUs, cpuidle $(cat /sys/devices/system/cpu/cpuidle/current_driver); $RUNS runs of $ROUNDS rounds, narrows host ${DURATION}s between" >&2
for run in $(seq 1 "$RUNS"); do
	for r in $(seq 1 "$ROUNDS"); do
		pa=$(pgb 8 3)
		slap 83000 >/dev/null # about 5 s of settling
		sa=$(slap 40000)
		awake
		pw=$(pgb 3 2)
		slap 50000 >/dev/null
		sw=$(slap 100000)
		asleep
		echo "pgbench $pa $pw" >>"$GAINS"
		echo "slap $sa $sw" >>"$GAINS"
		printf 'run %d round %d: pgbench %s → %s µs, gain %.1f; mariadb-slap %s → %s µs, gain %.1f\n' "$run" "$r" "$pa" "$pw" "$(echo "$pa - $pw" | bc)" "$sa" "$sw" "$(echo "$sa - $sw" | bc)"
	done
	"$WORK/narrows" host --duration "${DURATION}s" --json >"$WORK/host.json" 2>"$WORK/host.err" ||
		{ echo "$NAME: narrows host failed:" >&2; cat "$WORK/host.err" >&2; exit 1; }
	tail -n 1 "$WORK/host.json" | python3 -c 'import json, sys
w = json.load(sys.stdin)["host"]["here"]["wakeup"]
if w["verdict"] != "costs":
    print("run %s: narrows host: %s (%s)" % (sys.argv[1], w["verdict"], w.get("why", "")))
    sys.exit()
print("run %s: narrows host: %.1f µs a round trip (two wake-ups of %.1f; round trips %.1f as is, %.1f awake)" % (sys.argv[1], 2 * w["per_wake_seconds"] * 1e6,
      w["per_wake_seconds"] * 1e6, w["as_is_trip_seconds"] * 1e6, w["awake_trip_seconds"] * 1e6))
open(sys.argv[2], "a").write("narrows %f\n" % (2 * w["per_wake_seconds"] * 1e6))' "$run" "$GAINS"
done
python3 - "$GAINS" <<'EOF'
import statistics, sys
g = {"pgbench": [], "slap": [], "narrows": []}
for line in open(sys.argv[1]):
    f = line.split()
    g[f[0]].append(float(f[1]) - float(f[2]) if len(f) == 3 else float(f[1]))
if not g["narrows"]:
    print("narrows host judged no cost in any run"); sys.exit()
n = statistics.median(g["narrows"])
for c in ("pgbench", "slap"):
    m = statistics.median(g[c])
    print("%s: gain %.1f-%.1f µs over %d rounds, median %.1f; narrows' median prediction %.1f is %.2f of it" % (c, min(g[c]), max(g[c]), len(g[c]), m, n, n / m))
EOF
