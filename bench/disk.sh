#!/usr/bin/env bash
# bench/disk.sh: narrows disk against fio, side by side, on one directory.
#
#   4 KiB random read, QD 32:          IOPS              narrows / fio  (target >= 0.95)
#   8 KiB random 70/30 read/write, QD 8: IOPS (r + w)    narrows / fio  (target >= 0.95)
#   16 KiB write + fdatasync, QD 1:    flush latency p50 narrows / fio sync p50 (target within 5%)
#
# Both tools: io_uring, O_DIRECT, a file of the same size in the same
# directory (each its own file, written out in full before it is read),
# the same duration; the order alternates from round to round; medians
# are compared. See bench/README.md.
#
#   ROUNDS=4 DURATION=10 SIZE=1G SETTLE=3 DIR=/tmp bash bench/disk.sh   (the defaults; `make bench`)
#
# Exits 0 whether or not the targets are met (it is a measurement, not a
# test); exits non-zero if a tool failed to build or run.
set -euo pipefail

ROUNDS=${ROUNDS:-4}   # even: each tool runs first in as many rounds
DURATION=${DURATION:-10}
SIZE=${SIZE:-1G}
DIR=${DIR:-${TMPDIR:-/tmp}}
SETTLE=${SETTLE:-3}   # seconds of quiet after a sync before each run
# The log test (one I/O at a time: its latency is one wake-up after
# another) runs both tools on one CPU: the one that takes the block device's
# interrupts (the most "req"/"nvme"/"blk" interrupts in /proc/interrupts),
# unless PIN_CPU says otherwise (PIN_CPU=none: no pinning). On this VM a
# thread waiting on that CPU saw a flush in 55-60 µs, one on the other CPU
# in 100-110 µs (fio and narrows alike): left to the scheduler, which CPU
# each tool's waiting thread landed on moved the flush ratio by that much.
PIN_CPU=${PIN_CPU:-$(awk '/req|nvme|blk/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) if ($i > best) { best = $i; cpu = i - 2 } } END { print (cpu == "" ? 0 : cpu) }' /proc/interrupts 2>/dev/null || echo 0)}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NAME=disk.sh
. "$ROOT/bench/lib.sh"
positive ROUNDS DURATION
case $SETTLE in '' | *[!0-9]*) echo "disk.sh: SETTLE must be a whole number of seconds, not '$SETTLE'" >&2; exit 2 ;; esac
case $SIZE in '' | *[!0-9KMGkmg]*) echo "disk.sh: SIZE must be like 512M or 1G, not '$SIZE'" >&2; exit 2 ;; esac
isdir DIR

export NARROWS_BENCH_LIB=$ROOT/bench # bench/contention.py: what other processes' CPU means
OUT_DIR=$ROOT/bench/out
OUT_JSON=$OUT_DIR/disk.json
RAW_DIR=$OUT_DIR/disk-raw

need fio python3 -- go fio python3
scratch # both tools' files live in BENCH_DIR
FIO_FILE=$BENCH_DIR/fio-bench.dat
FAILURES=0

cat >"$WORK/bench.py" <<'PY'
import json, os, statistics, sys

def lines(path):
    return [l for l in open(path, encoding="utf-8", errors="replace").read().splitlines() if l.strip()]

def narrows_pattern(path):
    s = json.loads(lines(path)[-1])
    if s.get("type") != "summary":
        raise ValueError("last line is not the summary")
    if s.get("partial"):
        raise ValueError("summary is partial: %s" % s.get("error"))
    d = s["disk"]
    if d["engine"] != "io_uring" or not d["direct"]:
        raise ValueError("narrows ran with engine %s, direct %s: not comparable" % (d["engine"], d["direct"]))
    return d["patterns"][0]

def fio_job(path):
    # fio prints notes before its JSON on some versions: start at the brace.
    text = open(path, encoding="utf-8", errors="replace").read()
    d = json.loads(text[text.index("{"):])
    j = d["jobs"][0]
    if j.get("error"):
        raise ValueError("fio job error %s" % j["error"])
    return j

def pct(p, key="50.000000"):
    return p[key] if key in p else None

def parse(test, tool, path):
    if tool == "narrows":
        p = narrows_pattern(path)
        f = {"iops": p["iops"], "latency_p50_seconds": p["latency_p50_seconds"], "latency_p99_seconds": p["latency_p99_seconds"],
             "cpu_percent_of_core": p.get("cpu_percent_of_core")}
        if test == "log":
            f["flush_p50_seconds"] = p["flush_latency"]["latency_p50_seconds"]
            f["flush_p99_seconds"] = p["flush_latency"]["latency_p99_seconds"]
            f["write_p50_seconds"] = p["write_latency"]["latency_p50_seconds"]
        return f
    j = fio_job(path)
    cpu = (j.get("usr_cpu") or 0) + (j.get("sys_cpu") or 0)
    if test == "randread":
        return {"iops": j["read"]["iops"], "latency_p50_seconds": pct(j["read"]["clat_ns"]["percentile"]) / 1e9,
                "latency_p99_seconds": pct(j["read"]["clat_ns"]["percentile"], "99.000000") / 1e9, "cpu_percent_of_core": cpu}
    if test == "mix":
        return {"iops": j["read"]["iops"] + j["write"]["iops"], "read_iops": j["read"]["iops"], "write_iops": j["write"]["iops"],
                "cpu_percent_of_core": cpu}
    sync = j["sync"]["lat_ns"]
    if not sync.get("N"):
        raise ValueError("fio reported no sync latencies")
    return {"iops": j["write"]["iops"], "flush_p50_seconds": pct(sync["percentile"]) / 1e9,
            "flush_p99_seconds": pct(sync["percentile"], "99.000000") / 1e9,
            "write_p50_seconds": pct(j["write"]["clat_ns"]["percentile"]) / 1e9, "cpu_percent_of_core": cpu}

CONTENTION = 0.25  # cores used by other processes during a run that make it suspect

TESTS = {
    # test: (title, figure compared, unit, how the ratio is judged)
    "randread": ("(a) 4 KiB random read, QD 32: IOPS (higher is better)", "iops", "IOPS", "ratio >= 0.95"),
    "mix": ("(b) 8 KiB random 70/30 read/write, QD 8: IOPS, reads + writes (higher is better)", "iops", "IOPS", "ratio >= 0.95"),
    "log": ("(c) 16 KiB write + fdatasync, QD 1: flush (fdatasync) latency p50 (lower is better)", "flush_p50_seconds", "s", "0.95 <= ratio <= 1.05"),
}

def fmt(test, v):
    if v is None:
        return "-"
    if TESTS[test][2] == "s":
        return "%.1f us" % (v * 1e6)
    return "{:,.0f}".format(v)

def median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None

def met(test, r):
    if r is None:
        return False
    return 0.95 <= r <= 1.05 if test == "log" else r >= 0.95

def report(results_path, facts_path, out_path):
    results = [json.loads(l) for l in open(results_path) if l.strip()]
    facts = json.load(open(facts_path))
    rounds = facts["config"]["rounds"]
    def get(rnd, test, tool):
        for r in results:
            if r["round"] == rnd and r["test"] == test and r["tool"] == tool:
                return r
        return None
    W = 78
    print()
    print("=" * W)
    print("narrows disk vs fio (io_uring, O_DIRECT): %d round(s) of %ds, %s files in %s" % (
        rounds, facts["config"]["duration_seconds"], facts["config"]["size"], facts["config"]["directory"]))
    m = facts["machine"]
    print("%s, %s CPUs, kernel %s, %s; load before %s" % (m.get("cpu_model") or "?", m["nproc"], m["kernel"], m.get("filesystem") or "?", m["loadavg_before"]))
    print("=" * W)
    summary = {}
    for test, (title, key, unit, rule) in TESTS.items():
        print()
        print(title)
        print("  %-7s %-18s %-14s %-14s %-8s" % ("round", "order", "narrows", "fio", "ratio"))
        per_round = []
        for rnd in range(1, rounds + 1):
            a, b = get(rnd, test, "narrows"), get(rnd, test, "fio")
            va = a["figures"].get(key) if a and a["ok"] else None
            vb = b["figures"].get(key) if b and b["ok"] else None
            ra = va / vb if va is not None and vb else None
            order = "narrows then fio" if a and b and a["position"] < b["position"] else "fio then narrows"
            busy = lambda r: " *" if r and (r.get("other_cpu_cores") or 0) > CONTENTION else ""
            print("  %-7s %-18s %-14s %-14s %-8s" % (rnd, order, (fmt(test, va) if va is not None else "FAILED") + busy(a),
                  (fmt(test, vb) if vb is not None else "FAILED") + busy(b), "-" if ra is None else "%.3f" % ra))
            per_round.append({"round": rnd, "narrows": va, "fio": vb, "ratio": ra,
                              "narrows_figures": a["figures"] if a and a["ok"] else None, "fio_figures": b["figures"] if b and b["ok"] else None})
        ma, mb = median([e["narrows"] for e in per_round]), median([e["fio"] for e in per_round])
        r = ma / mb if ma is not None and mb else None
        print("  %-7s %-18s %-14s %-14s %-8s" % ("median", "", fmt(test, ma), fmt(test, mb), "-" if r is None else "%.3f" % r))
        if test == "log":
            wa = median([(e["narrows_figures"] or {}).get("write_p50_seconds") for e in per_round])
            wb = median([(e["fio_figures"] or {}).get("write_p50_seconds") for e in per_round])
            ia = median([(e["narrows_figures"] or {}).get("iops") for e in per_round])
            ib = median([(e["fio_figures"] or {}).get("iops") for e in per_round])
            print("  (informational: write p50 narrows %s, fio clat %s; commits/s narrows %s, fio write IOPS %s)" % (
                fmt("log", wa), fmt("log", wb), fmt("randread", ia), fmt("randread", ib)))
        vals = lambda k: [e[k] for e in per_round if e[k] is not None]
        spread = lambda v: (max(v) - min(v)) / median(v) if len(v) > 1 and median(v) else None
        sa, sb = spread(vals("narrows")), spread(vals("fio"))
        if sa is not None and sb is not None:
            print("  spread between rounds (max-min)/median: narrows %.1f%%, fio %.1f%%" % (100 * sa, 100 * sb))
        summary[test] = {"figure": key, "unit": unit, "rounds": per_round, "median": {"narrows": ma, "fio": mb},
                         "ratio_narrows_over_fio": r, "target": rule, "target_met": met(test, r),
                         "spread_max_minus_min_over_median": {"narrows": sa, "fio": sb}}
    print()
    print("targets (from the medians):")
    for test, label in (("randread", "4 KiB randread QD32 IOPS       "), ("mix", "8 KiB 70/30 QD8 IOPS          "),
                        ("log", "16 KiB fdatasync flush p50    ")):
        e = summary[test]
        r = e["ratio_narrows_over_fio"]
        verdict = "MET" if e["target_met"] else ("NOT MET" if r is not None else "UNKNOWN (a tool failed)")
        print("  %s ratio %-6s %-22s %s" % (label, "-" if r is None else "%.3f" % r, e["target"], verdict))
    others = [r["other_cpu_cores"] for r in results if r.get("other_cpu_cores") is not None]
    busy = [r for r in results if (r.get("other_cpu_cores") or 0) > CONTENTION]
    print()
    if others:
        print("other processes' CPU during the runs: median %.2f, max %.2f cores (of %s)" % (median(others), max(others), m["nproc"]))
    if busy:
        print("note (* above): other work competed for the CPU in %d of %d runs (> %.2f cores);" % (len(busy), len(results), CONTENTION))
        print("      these shapes are CPU-bound on a fast device, so rerun on a quiet machine to trust the ratios.")
    failed = [r for r in results if not r["ok"]]
    for r in failed:
        print("FAILED: round %d %s %s: %s" % (r["round"], r["test"], r["tool"], r.get("error")))
    doc = {"schema": "narrows-bench-disk/v1", "date": facts["date"], "config": facts["config"], "machine": m, "tools": facts["tools"],
           "comparisons": summary, "runs": results, "failures": len(failed),
           "contention": {"threshold_cores": CONTENTION, "other_cpu_cores_median": median(others),
                          "busy_runs": [{"round": r["round"], "test": r["test"], "tool": r["tool"], "other_cpu_cores": r["other_cpu_cores"]} for r in busy]},
           "raw_output_dir": facts["raw_output_dir"]}
    with open(out_path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(out_path + ".tmp", out_path)
    print()
    print("wrote %s" % out_path)

sys.path.insert(0, os.environ["NARROWS_BENCH_LIB"])
from contention import busy_ticks as cpu_ticks

def run_measured(meta, out, err, limit, cmd):
    """Run one tool with a time limit; measure how much CPU everything else used meanwhile."""
    import resource, subprocess, time
    hz = os.sysconf("SC_CLK_TCK")
    t0 = cpu_ticks()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.monotonic()
    with open(out, "w") as fo, open(err, "w") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            fe.write("\ndisk.sh: killed after %ss\n" % limit)
            rc = 124
    wall = time.monotonic() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    total = (cpu_ticks() - t0) / hz
    json.dump({"exit_code": rc, "wall_seconds": wall, "own_cpu_cores": own / wall,
               "other_cpu_cores": max(0.0, total - own) / wall}, open(meta, "w"))

def main():
    cmd = sys.argv[1]
    if cmd == "run":
        meta, out, err, limit = sys.argv[2:6]
        run_measured(meta, out, err, float(limit), sys.argv[6:])
    elif cmd == "record":
        rnd, test, tool, pos, meta, out = sys.argv[2:8]
        m = json.load(open(meta))
        rec = {"round": int(rnd), "test": test, "tool": tool, "position": int(pos)}
        rec.update(m)
        try:
            if m["exit_code"] != 0:
                raise ValueError("exit code %s" % m["exit_code"])
            rec["figures"], rec["ok"] = parse(test, tool, out), True
        except Exception as e:
            rec["ok"], rec["error"] = False, "%s: %s" % (type(e).__name__, e)
        print(json.dumps(rec))
    elif cmd == "show":
        r = json.loads(sys.argv[2])
        if not r["ok"]:
            print("  %-8s %-9s FAILED: %s" % (r["test"], r["tool"], r.get("error")))
            return
        key = TESTS[r["test"]][1]
        oc = r.get("other_cpu_cores")
        print("  %-8s %-9s %-14s cpu %5.0f%%  (other processes: %.2f cores%s)" % (r["test"], r["tool"], fmt(r["test"], r["figures"][key]),
              r["figures"].get("cpu_percent_of_core") or 0, oc or 0, ", BUSY" if (oc or 0) > CONTENTION else ""))
    elif cmd == "ok":
        print("1" if json.loads(sys.argv[2])["ok"] else "0")
    elif cmd == "report":
        report(sys.argv[2], sys.argv[3], sys.argv[4])

main()
PY
bench() { python3 "$WORK/bench.py" "$@"; }

echo "disk.sh: building narrows ..."
BIN=$WORK/narrows
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$BIN" ./cmd/narrows)

first_line() { "$@" 2>&1 | grep -v '^[[:space:]]*$' | head -n 1 || true; }
NPROC=$(nproc)
KERNEL=$(uname -r)
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | sed 's/^model name[[:space:]]*:[[:space:]]*//' || true)
FS=$(findmnt -n -o FSTYPE,SOURCE --target "$BENCH_DIR" 2>/dev/null | head -n 1 || true)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
V_NARROWS=$(first_line "$BIN" version)
V_FIO=$(first_line fio --version)
V_GO=$(go version)
GIT_COMMIT=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
GIT_DIRTY=$(if [ -n "$(git -C "$ROOT" --no-optional-locks status --porcelain 2>/dev/null | head -n 1)" ]; then echo true; else echo false; fi)

RESULTS=$WORK/results.jsonl
: >"$RESULTS"
rm -rf "$RAW_DIR"
mkdir -p "$OUT_DIR" "$RAW_DIR"
LIMIT=$((DURATION + 120)) # includes each tool's layout of its file

# The same shapes for both. fio: --norandommap draws offsets uniformly
# with replacement, as narrows does; --overwrite=1 makes it write its file
# out in full before a write job too, as narrows does (fdatasync on a
# preallocated, never written extent would also commit its conversion).
FIO_COMMON=(--name=bench --filename="$FIO_FILE" --size="$SIZE" --ioengine=io_uring --direct=1 --time_based --runtime="$DURATION"
	--norandommap --randrepeat=1 --output-format=json)
NARROWS_COMMON=(disk --path "$BENCH_DIR" --size "$SIZE" --duration "${DURATION}s" --engine io_uring --json)
tool_cmd() { # tool_cmd TEST TOOL
	case $1/$2 in
	randread/narrows) CMD=("$BIN" "${NARROWS_COMMON[@]}" --rw randread --block 4K --qd 32) ;;
	randread/fio) CMD=(fio "${FIO_COMMON[@]}" --rw=randread --bs=4k --iodepth=32) ;;
	mix/narrows) CMD=("$BIN" "${NARROWS_COMMON[@]}" --rw mix --mix 70 --block 8K --qd 8) ;;
	mix/fio) CMD=(fio "${FIO_COMMON[@]}" --rw=randrw --rwmixread=70 --bs=8k --iodepth=8) ;;
	log/narrows) CMD=("$BIN" "${NARROWS_COMMON[@]}" --rw write --block 16K --qd 1 --sync fdatasync) ;;
	log/fio) CMD=(fio "${FIO_COMMON[@]}" --rw=write --bs=16k --iodepth=1 --fdatasync=1 --overwrite=1) ;;
	esac
}

run_tool() { # run_tool ROUND TEST TOOL POSITION
	local rnd=$1 test=$2 tool=$3 pos=$4
	local out=$RAW_DIR/round$rnd-$test-$tool.out err=$RAW_DIR/round$rnd-$test-$tool.err meta=$WORK/round$rnd-$test-$tool.meta
	tool_cmd "$test" "$tool"
	# Each run starts from a fresh file, written out before it is measured:
	# fio lays its file out again (outside its runtime), as narrows does.
	rm -f "$FIO_FILE"
	# Let the previous run's writes reach the device first: on a virtual
	# disk backed by a host file, a flush also pays for the host's dirty
	# data, so whichever tool ran second after a write-heavy run lost.
	sync
	sleep "$SETTLE"
	if [ "$test" = log ] && [ "$PIN_CPU" != none ]; then
		CMD=(taskset -c "$PIN_CPU" "${CMD[@]}")
	fi
	bench run "$meta" "$out" "$err" "$LIMIT" "${CMD[@]}"
	local line
	line=$(bench record "$rnd" "$test" "$tool" "$pos" "$meta" "$out")
	printf '%s\n' "$line" >>"$RESULTS"
	bench show "$line"
	if [ "$(bench ok "$line")" != 1 ]; then
		FAILURES=$((FAILURES + 1))
		tail -n 5 "$err" | sed 's/^/      | /'
	fi
}

echo "disk.sh: $ROUNDS round(s), ${DURATION}s per run, 6 runs per round, $SIZE files in $BENCH_DIR (${FS:-unknown filesystem}), ${SETTLE}s settle before each, the log test on CPU $PIN_CPU"

for rnd in $(seq 1 "$ROUNDS"); do
	echo "round $rnd/$ROUNDS"
	for test in randread mix log; do
		if [ $((rnd % 2)) -eq 1 ]; then
			run_tool "$rnd" "$test" narrows 1
			run_tool "$rnd" "$test" fio 2
		else
			run_tool "$rnd" "$test" fio 1
			run_tool "$rnd" "$test" narrows 2
		fi
	done
done

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
# The exact commands, from tool_cmd itself, with the directory written DIR.
BF_COMMANDS=$(for test in randread mix log; do for tool in narrows fio; do
	tool_cmd "$test" "$tool"
	line=${CMD[*]}
	line=${line//"$BIN"/narrows}
	printf '%s\t%s\t%s\n' "$test" "$tool" "${line//"$BENCH_DIR"/DIR}"
done; done)
export BF_COMMANDS BF_DATE=$DATE BF_ROUNDS=$ROUNDS BF_DURATION=$DURATION BF_SIZE=$SIZE BF_DIR=$DIR BF_FS=$FS BF_NPROC=$NPROC BF_KERNEL=$KERNEL \
	BF_CPU_MODEL=$CPU_MODEL BF_LOAD_BEFORE=$LOAD_BEFORE BF_LOAD_AFTER=$LOAD_AFTER BF_V_NARROWS=$V_NARROWS BF_V_FIO=$V_FIO BF_V_GO=$V_GO \
	BF_GIT_COMMIT=$GIT_COMMIT BF_GIT_DIRTY=$GIT_DIRTY BF_RAW_DIR=$RAW_DIR
python3 - "$WORK/facts.json" <<'PY'
import json, os, sys
e = os.environ
d, s = int(e["BF_DURATION"]), e["BF_SIZE"]
# Where each figure compared is read from, after the command that makes it.
figure = {("randread", "fio"): "  (read.iops)", ("mix", "fio"): "  (read.iops + write.iops)",
          ("log", "narrows"): "  (flush_latency.latency_p50_seconds)", ("log", "fio"): "  (sync.lat_ns.percentile 50)"}
commands = {}
for line in e["BF_COMMANDS"].splitlines():
    test, tool, cmd = line.split("\t")
    commands.setdefault(test, {})[tool] = cmd + figure.get((test, tool), "")
json.dump({
    "date": e["BF_DATE"],
    "config": {"rounds": int(e["BF_ROUNDS"]), "duration_seconds": d, "size": s, "directory": e["BF_DIR"],
               "order": "odd rounds: narrows first, then fio; even rounds: fio first",
               "commands": commands},
    "machine": {"nproc": int(e["BF_NPROC"]), "kernel": e["BF_KERNEL"], "cpu_model": e["BF_CPU_MODEL"], "filesystem": e["BF_FS"],
                "loadavg_before": e["BF_LOAD_BEFORE"], "loadavg_after": e["BF_LOAD_AFTER"]},
    "tools": {"narrows": e["BF_V_NARROWS"], "narrows_git_commit": e["BF_GIT_COMMIT"], "narrows_git_dirty": e["BF_GIT_DIRTY"] == "true",
              "go": e["BF_V_GO"], "fio": e["BF_V_FIO"]},
    "raw_output_dir": e["BF_RAW_DIR"],
}, open(sys.argv[1], "w"))
PY

bench report "$RESULTS" "$WORK/facts.json" "$OUT_JSON"

if [ "$FAILURES" -gt 0 ]; then
	echo "disk.sh: $FAILURES run(s) failed; the figures above are incomplete" >&2
	exit 1
fi
exit 0
