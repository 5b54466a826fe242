#!/usr/bin/env bash
# bench/fleetwatch.sh: what `narrows fleet watch` costs this host, per link.
#
# AGENTS real agents (narrows serve) on loopback share LINKS links; one
# fleet watch process watches them all at its default rate (1 round trip a
# second a link). Over DURATION seconds, after WARMUP seconds for every
# link to come up, the watcher's CPU time (utime + stime from
# /proc/PID/stat) and its peak resident memory (VmHWM from
# /proc/PID/status) are read; each round runs twice: without path-MTU
# checks (--mtu-every 0) and with them (--mtu-every MTU_EVERY: every link
# checks once within the window, the checks spread over it). The agents'
# own CPU is not counted (they stand for the far hosts). Issue 29's goal:
# 200 links under 5% of one core and under 200 MiB.
#
#   LINKS=200 ROUNDS=3 DURATION=60 WARMUP=10 AGENTS=4 MTU_EVERY=1m bash bench/fleetwatch.sh
#
# Exits 0 whether or not the goal is met (a measurement, not a test);
# non-zero if narrows failed to build, start or run, or a link never came up.
set -euo pipefail

LINKS=${LINKS:-200}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-60}
WARMUP=${WARMUP:-10}
AGENTS=${AGENTS:-4}
MTU_EVERY=${MTU_EVERY:-1m}
RATE=${RATE:-} # empty: fleet watch's default

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NAME=fleetwatch.sh
DIR=${TMPDIR:-/tmp}
. "$ROOT/bench/lib.sh"
positive LINKS ROUNDS DURATION WARMUP AGENTS
need python3 -- go python3
scratch

PIDS=() # the agents and the watcher, stopped however the script ends
on_exit() { stop_pids; }

echo "$NAME: building narrows" >&2
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/narrows" ./cmd/narrows)
export NARROWS_SECRET=fleetwatch-bench-$RANDOM$RANDOM$RANDOM
export NARROWS_NO_HISTORY=1

# The agents: each takes its share of the links' round-trip tests and
# their path-MTU checks at once, from one address.
per=$(((LINKS + AGENTS - 1) / AGENTS))
tests=$((2 * per + 8))
conns=$((4 * per + 64))
addrs=()
for i in $(seq 1 "$AGENTS"); do
	start_agent "$WORK/agent$i.log" --max-tests "$tests" --max-conns "$conns" --max-unauth-per-host "$conns"
	addrs+=("$AGENT_ADDR")
done
targets=$WORK/targets
for i in $(seq 0 $((LINKS - 1))); do echo "link$i=${addrs[$((i % AGENTS))]}"; done >"$targets"

hz=$(getconf CLK_TCK)
# measure MTU: one fleet watch run; prints "cpu_percent peak_rss_kib up links".
measure() {
	local mtu=$1 out=$WORK/watch.out err=$WORK/watch.err pid url start_ticks end_ticks t0 t1
	local rate=()
	[ -z "$RATE" ] || rate=(--rate "$RATE")
	"$WORK/narrows" fleet watch --targets "@$targets" --mtu-every "$mtu" "${rate[@]}" --timeout 5s --interval 10s \
		--prometheus-listen 127.0.0.1:0 --json >"$out" 2>"$err" &
	pid=$!
	PIDS+=("$pid")
	sleep "$WARMUP"
	url=$(sed -n 's/^serving Prometheus metrics at \(http:[^ ]*\)$/\1/p' "$err" | head -1)
	[ -n "$url" ] || { echo "$NAME: no metrics address:" >&2; cat "$err" >&2; exit 1; }
	t0=$(date +%s.%N)
	start_ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	sleep "$DURATION"
	end_ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	t1=$(date +%s.%N)
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
	up=$(python3 - "$url" <<'PY'
import sys, urllib.request
up = total = 0
for line in urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().splitlines():
    if line.startswith("narrows_watch_up{"):
        total += 1
        up += line.rsplit(" ", 1)[1] == "1"
print(up, total)
PY
)
	kill -INT "$pid"
	wait "$pid" || { echo "$NAME: fleet watch exited $?:" >&2; tail -5 "$err" >&2; exit 1; }
	PIDS=("${PIDS[@]/$pid/}")
	python3 -c "import sys; t, hz, dt = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]); print('%.2f' % (100 * t / hz / dt))" \
		"$((end_ticks - start_ticks))" "$hz" "$(python3 -c "print($t1 - $t0)")" | tr '\n' ' '
	echo "$hwm $up"
}

echo "$NAME: $LINKS links over $AGENTS agents, $ROUNDS rounds of ${DURATION}s after ${WARMUP}s, $(nproc) CPUs" >&2
results=$WORK/results
: >"$results"
for r in $(seq 1 "$ROUNDS"); do
	for mtu in 0 "$MTU_EVERY"; do
		line=$(measure "$mtu")
		echo "round $r --mtu-every $mtu: cpu % of a core, peak RSS KiB, links up, links: $line" >&2
		echo "$mtu $line" >>"$results"
	done
done
python3 - "$results" "$LINKS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
links = int(sys.argv[2])
print(f"fleet watch, {links} links (goal: under 5% of one core and under 200 MiB)")
for mtu in dict.fromkeys(r[0] for r in rows):
    rs = [r for r in rows if r[0] == mtu]
    cpu = [float(r[1]) for r in rs]
    rss = [int(r[2]) / 1024 for r in rs]
    up = min(int(r[3]) for r in rs)
    print(f"  --mtu-every {mtu:>4}: cpu {statistics.median(cpu):.2f}% of a core (rounds {', '.join('%.2f' % c for c in cpu)}), "
          f"peak RSS {max(rss):.1f} MiB (rounds {', '.join('%.1f' % x for x in rss)}), links up at the end {up} of {links}")
PY
