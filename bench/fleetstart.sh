#!/usr/bin/env bash
# bench/fleetstart.sh: how late a fleet's hosts begin after the instant
# fleet disk gives them, with many agents on this one machine.
#
# For each count in COUNTS, that many agents (narrows serve, each with a
# directory of its own under DIR) are started on loopback and one
# `narrows fleet disk` runs 4 KiB random reads of a 1 MiB file on all of
# them for 500 ms, ROUNDS times; each run's start is read from its JSON:
# the median host's time after the instant and the last's, each by its
# own clock (its offset to this one taken off). Issue 29 asks for 5 ms at
# the median with 100 agents; on one machine the agents share its cores,
# and those that begin first take them from those still waking.
#
#   COUNTS="8 25 50 100" ROUNDS=3 bash bench/fleetstart.sh
#
# Exits 0 whatever it reads (a measurement, not a test); non-zero if
# narrows failed to build, an agent did not start or a run failed.

COUNTS=${COUNTS:-8 25 50 100}
ROUNDS=${ROUNDS:-3}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NAME=fleetstart.sh
DIR=${TMPDIR:-/tmp}
. "$ROOT/bench/lib.sh"
positive ROUNDS
for n in $COUNTS; do N=$n positive N; done
need python3 -- go python3
scratch

PIDS=() # the agents, stopped however the script ends
on_exit() { stop_pids; }

echo "$NAME: building narrows" >&2
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/narrows" ./cmd/narrows)
export NARROWS_SECRET=fleetstart-bench-$RANDOM$RANDOM$RANDOM
export NARROWS_NO_HISTORY=1

# agents N: N agents listening, their addresses in ADDRS.
agents() {
	local i log addr
	ADDRS=()
	for i in $(seq 1 "$1"); do
		mkdir -p "$BENCH_DIR/host$i"
		start_agent "$WORK/agent$i.log" --disk-path "$BENCH_DIR/host$i"
		ADDRS+=("$AGENT_ADDR")
	done
}

echo "$NAME: $(nproc) CPUs; counts: $COUNTS; $ROUNDS rounds each" >&2
for n in $COUNTS; do
	stop_pids
	PIDS=()
	agents "$n"
	on=$(IFS=,; echo "${ADDRS[*]}")
	for r in $(seq 1 "$ROUNDS"); do
		out=$WORK/run.json
		"$WORK/narrows" fleet disk --on "$on" --rw randread --block 4K --duration 500ms --size 1M --timeout 10s --json >"$out" 2>"$WORK/run.err" ||
			{ echo "$NAME: fleet disk on $n agents failed:" >&2; cat "$WORK/run.err" >&2; exit 1; }
		tail -1 "$out" | python3 -c '
import json, sys
n, r = sys.argv[1], sys.argv[2]
s = json.load(sys.stdin)["fleet"]["start"]
print("%s agents, round %s: %d began, the median %.2f ms after the instant, the last %.2f ms" % (n, r, s["hosts"], s["median_after_seconds"] * 1e3, s["max_after_seconds"] * 1e3))' "$n" "$r"
	done
done
