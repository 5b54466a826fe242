#!/usr/bin/env bash
# bench/commit.sh: narrows net commit --ack flush against fio's write +
# fdatasync, side by side, on one directory, with the agent on loopback.
#
#   8 KiB blocks, one in flight: the agent's flush p50   / fio's sync p50 (target within 10%)
#                                narrows commits/s       / fio IOPS (the rest is the round trip)
#   the log profile's 8 KiB write + fdatasync (narrows disk, what plan sync takes as the local flush):
#                                commits/s / pg_test_fsync's fdatasync line for one 8kB write (within 10%)
#                                flush p50 / fio's sync p50, the same pattern (within 10%)
#
# narrows writes through the page cache and fdatasyncs each block (as a
# walreceiver does); fio the same (--fdatasync=1, buffered), a 64 MiB file
# each, written out in full before it is measured, the same duration; rounds alternate which tool goes first; medians
# are compared. A measurement, not a test: exits 0 whatever the ratios.
#
#   ROUNDS=4 DURATION=5 DIR=/tmp bash bench/commit.sh
set -euo pipefail

ROUNDS=${ROUNDS:-4}
DURATION=${DURATION:-5}
DIR=${DIR:-${TMPDIR:-/tmp}}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NAME=commit.sh
. "$ROOT/bench/lib.sh"
positive ROUNDS DURATION
isdir DIR
need fio python3 -- go fio python3
AGENT_PID=
on_exit() { if [ -n "$AGENT_PID" ]; then kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null; fi; }
scratch

(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/narrows" ./cmd/narrows)
export NARROWS_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$WORK/narrows" serve --listen 127.0.0.1:0 --disk-path "$BENCH_DIR" 2>"$WORK/agent.log" &
AGENT_PID=$!
for _ in $(seq 100); do
	ADDR=$(sed -n 's/.*msg="agent listening" addr=\([^ ]*\).*/\1/p' "$WORK/agent.log")
	[ -n "$ADDR" ] && break
	sleep 0.1
done
[ -n "$ADDR" ] || { echo "commit.sh: the agent did not start:" >&2; cat "$WORK/agent.log" >&2; exit 1; }

narrows_run() {
	"$WORK/narrows" net commit --to "$ADDR" --block 8K --in-flight 1 --ack flush --flush fdatasync \
		--duration "${DURATION}s" --size 64M --json | tail -1 >"$WORK/narrows.$1.json"
}
fio_run() { # fio_run OUT SIZE_MIB
	# Written out in full first, as the agent lays out its log file (and a
	# database its log segments: preallocated, zero-filled): a flush of
	# overwritten blocks carries no allocation with it, as it would in
	# fio's fallocated, unwritten file.
	dd if=/dev/zero of="$BENCH_DIR/fio.dat" bs=1M count="$2" conv=fdatasync status=none
	fio --name=commit --fallocate=none --rw=write --bs=8k --fdatasync=1 --size="$2"m --runtime="$DURATION" --time_based \
		--filename="$BENCH_DIR/fio.dat" --output-format=json >"$1"
	rm -f "$BENCH_DIR/fio.dat"
}
# The log profile's 8 KiB write + fdatasync on a 16 MiB file (a WAL
# segment); the profile runs its six patterns, DURATION each.
disk_run() {
	"$WORK/narrows" disk --path "$BENCH_DIR" --profile log --size 16M --duration "${DURATION}s" --json --no-history | tail -1 >"$WORK/disk.$1.json"
}
PG_TEST_FSYNC=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | sort -V | tail -1 || true)
pgtf_run() {
	"$PG_TEST_FSYNC" -f "$BENCH_DIR/pgtf.dat" -s "$DURATION" >"$WORK/pgtf.$1.txt" 2>&1
	rm -f "$BENCH_DIR/pgtf.dat"
}
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then narrows_run "$r"; fio_run "$WORK/fio.$r.json" 64; else fio_run "$WORK/fio.$r.json" 64; narrows_run "$r"; fi
	if [ -n "$PG_TEST_FSYNC" ]; then
		if [ $((r % 2)) -eq 1 ]; then disk_run "$r"; pgtf_run "$r"; fio_run "$WORK/fiolog.$r.json" 16
		else fio_run "$WORK/fiolog.$r.json" 16; pgtf_run "$r"; disk_run "$r"; fi
	fi
	echo "round $r of $ROUNDS done" >&2
done

python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, rounds + 1):
    c = json.load(open(f"{work}/narrows.{r}.json"))["commit"]
    j = json.load(open(f"{work}/fio.{r}.json"))["jobs"][0]
    rows.append(dict(flush=c["agent_flush_latency"]["latency_p50_seconds"] * 1e6, commit=c["commit_latency"]["latency_p50_seconds"] * 1e6,
                     rate=c["commits_per_second"], fsync=j["sync"]["lat_ns"]["percentile"]["50.000000"] / 1e3, iops=j["write"]["iops"]))
med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
print("8 KiB, one in flight, write + fdatasync   narrows          fio      ratio")
print("flush p50 (agent / fio sync)          %8.0f µs  %8.0f µs   %.2f" % (med["flush"], med["fsync"], med["flush"] / med["fsync"]))
print("commits/s (narrows) / IOPS (fio)      %11.0f  %11.0f   %.2f" % (med["rate"], med["iops"], med["rate"] / med["iops"]))
print("narrows commit p50 (flush + round trip + write): %.0f µs" % med["commit"])
import os, re
if not os.path.exists(f"{work}/pgtf.1.txt"):
    print("(pg_test_fsync not found: the log profile's comparison skipped; apt-get install -y postgresql)")
    sys.exit(0)
rows = []
for r in range(1, rounds + 1):
    d = json.load(open(f"{work}/disk.{r}.json"))["disk"]
    p = next(p for p in d["patterns"] if p["block_bytes"] == 8192 and p["sync"] == "fdatasync")
    t = open(f"{work}/pgtf.{r}.txt").read()
    m = re.search(r"one 8kB write.*?\n\s*fdatasync\s+([0-9.]+) ops/sec", t, re.S)
    j = json.load(open(f"{work}/fiolog.{r}.json"))["jobs"][0]
    rows.append(dict(rate=p["iops"], flush=p["flush_latency"]["latency_p50_seconds"] * 1e6, through=p.get("through_cache", False),
                     pg=float(m.group(1)), fsync=j["sync"]["lat_ns"]["percentile"]["50.000000"] / 1e3))
med = {k: statistics.median(r[k] for r in rows) for k in ("rate", "flush", "pg", "fsync")}
print()
print("the log profile's 8 KiB write + fdatasync (through the page cache: %s)   narrows   peer   ratio" % all(r["through"] for r in rows))
print("commits/s / pg_test_fsync fdatasync (one 8kB write)   %8.0f  %8.0f   %.2f" % (med["rate"], med["pg"], med["rate"] / med["pg"]))
print("flush p50 / fio sync p50 (8 KiB, 16 MiB zero-filled)  %6.0f µs %6.0f µs  %.2f" % (med["flush"], med["fsync"], med["flush"] / med["fsync"]))
PY
