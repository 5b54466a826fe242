#!/usr/bin/env bash
# bench/history.sh: what keeping a run in the local history costs narrows,
# and its store's insert beside sqlite3's own.
#
#   insert: one run's row (BEGIN IMMEDIATE; INSERT; COMMIT) into a store of 200
#           runs: narrows' pure-Go SQLite (modernc.org/sqlite, through
#           database/sql) against the sqlite3 shell (C SQLite), the same
#           schema, pragmas, file system and row sizes    ratio = sqlite3's time / narrows'
#   add:    Store.Add in an open store (the JSON, the gzip and the insert)  no peer
#   keep:   open + Add + close, what every recorded command pays at its end  no peer
#
# narrows' figures are BenchmarkHistoryAdd's (internal/history, ns/op over
# BENCHTIME); sqlite3's is the time of a session of COUNT such transactions
# less that of the same session with none (its start, the pragmas, the
# blobs made), over COUNT. The store is made empty by narrows itself (the
# real schema, in WAL), then filled with 200 rows. Rounds alternate which
# goes first; medians are compared. A measurement, not a test: exits 0
# whatever the ratio.
#
#   ROUNDS=5 COUNT=2000 BENCHTIME=1s DIR=/tmp bash bench/history.sh
set -euo pipefail

ROUNDS=${ROUNDS:-5}
COUNT=${COUNT:-2000}
BENCHTIME=${BENCHTIME:-1s}
DIR=${DIR:-${TMPDIR:-/tmp}}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NAME=history.sh
. "$ROOT/bench/lib.sh"
positive ROUNDS COUNT
isdir DIR
need sqlite3 python3 -- go sqlite3 python3
scratch

(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/narrows" ./cmd/narrows && CGO_ENABLED=0 go test -c -o "$WORK/history.test" ./internal/history)
mkdir -p "$ROOT/bench/out"
export NARROWS_BENCH_LIB=$ROOT/bench # bench/contention.py: what other processes' CPU means

python3 - "$WORK" "$BENCH_DIR" "$ROUNDS" "$COUNT" "$BENCHTIME" "$ROOT/bench/out/history.json" <<'PY'
import json, os, re, resource, statistics, subprocess, sys, time
work, bench_dir, rounds, count, benchtime, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
sys.path.insert(0, os.environ["NARROWS_BENCH_LIB"])
from contention import busy_ticks
hz = os.sysconf("SC_CLK_TCK")
BUSY = 0.25  # cores of other processes above which a run is marked

def measured(cmd, **kw):
    """Runs cmd; returns its stdout, wall seconds and the cores other processes used meanwhile."""
    b0, r0, w0 = busy_ticks(), resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    wall = time.monotonic() - w0
    b1, r1 = busy_ticks(), resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        sys.exit("history.sh: %s failed:\n%s" % (cmd[0], p.stdout[-2000:]))
    return p.stdout, wall, max(0.0, (b1 - b0) / hz - own) / wall

def narrows(benchtime):
    env = dict(os.environ, TMPDIR=bench_dir)  # b.TempDir: the store on DIR, as sqlite3's
    txt, _, other = measured([f"{work}/history.test", "-test.run", "^$", "-test.bench", "^BenchmarkHistoryAdd$",
                              "-test.benchtime", benchtime], env=env)
    r = {"other_cpu_cores": other}
    for name in ("keep", "add", "insert"):
        m = re.search(r"BenchmarkHistoryAdd/%s\S*\s+\d+\s+([0-9.]+) ns/op\s+([0-9.]+) intervals-B\s+([0-9.]+) summary-B" % name, txt)
        if not m:
            sys.exit("history.sh: no %s figure in the benchmark's output:\n%s" % (name, txt))
        r[name] = float(m.group(1)) / 1e9
        r["intervals_bytes"], r["summary_bytes"] = int(float(m.group(2))), int(float(m.group(3)))
    return r

# One run's row, its blobs from the temporary table r (made once a session).
ROW = ("INSERT INTO runs (started_at, command, target, headline_name, headline, headline_unit, partial, "
       "narrows_version, summary, intervals, intervals_kept, intervals_dropped) SELECT '2026-01-02T03:04:05Z', 'net stream', "
       "'127.0.0.1:7447', 'throughput', 940000000.0, 'bits', 0, '1.0', s, i, 100, 0 FROM r")
INSERT = "BEGIN IMMEDIATE; " + ROW + "; COMMIT;\n"

def sqlite3(r, sizes):
    store = f"{bench_dir}/peer.{r}"
    subprocess.run([f"{work}/narrows", "history", "--limit", "1"], env=dict(os.environ, NARROWS_HISTORY=store),
                   stdout=subprocess.DEVNULL, check=True)  # the real schema, in WAL
    db = f"{store}/history.db"
    head = ("PRAGMA busy_timeout=10000; PRAGMA synchronous=NORMAL;\n"  # narrows' DSN (internal/history/driver.go)
            "CREATE TEMP TABLE r AS SELECT randomblob(%d) s, randomblob(%d) i;\n" % (sizes["summary_bytes"], sizes["intervals_bytes"]))
    fill = head + "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 200) " + ROW + ", n;\n"
    subprocess.run(["sqlite3", "-batch", db], input=fill, text=True, stdout=subprocess.DEVNULL, check=True)
    for n in (0, count):
        with open(f"{work}/peer.{n}.sql", "w") as f:
            f.write(head + INSERT * n)
    with open(f"{work}/peer.0.sql") as f:
        _, empty, o0 = measured(["sqlite3", "-batch", db], stdin=f)
    with open(f"{work}/peer.{count}.sql") as f:
        _, full, o1 = measured(["sqlite3", "-batch", db], stdin=f)
    return {"insert": (full - empty) / count, "session_seconds": full, "empty_session_seconds": empty,
            "other_cpu_cores": (o0 * empty + o1 * full) / (empty + full)}

def us(s):
    return "%8.0f µs" % (s * 1e6)

# Warm-up, thrown away; it also gives the row's sizes for sqlite3.
sizes = narrows("1x")
sqlite3(0, sizes)
print("history.sh: %d round(s); a row of %d + %d bytes (summary, intervals); sqlite3: %d transactions a session"
      % (rounds, sizes["summary_bytes"], sizes["intervals_bytes"], count))
rows = []
for r in range(1, rounds + 1):
    order = ("narrows", "sqlite3") if r % 2 else ("sqlite3", "narrows")
    res = {}
    for tool in order:
        res[tool] = narrows(benchtime) if tool == "narrows" else sqlite3(r, sizes)
    n, s = res["narrows"], res["sqlite3"]
    busy = max(n["other_cpu_cores"], s["other_cpu_cores"]) > BUSY
    rows.append({"round": r, "first": order[0], "narrows": n, "sqlite3": s, "busy": busy})
    print("round %d (%s first)  insert: narrows %s, sqlite3 %s (%.2f)   add %s   keep %s%s"
          % (r, order[0], us(n["insert"]), us(s["insert"]), s["insert"] / n["insert"], us(n["add"]), us(n["keep"]),
             "   * other processes %.2f cores" % max(n["other_cpu_cores"], s["other_cpu_cores"]) if busy else ""))
med = lambda tool, k: statistics.median(row[tool][k] for row in rows)
summary = {"insert_narrows_seconds": med("narrows", "insert"), "insert_sqlite3_seconds": med("sqlite3", "insert"),
           "add_seconds": med("narrows", "add"), "keep_seconds": med("narrows", "keep")}
summary["ratio_sqlite3_over_narrows"] = summary["insert_sqlite3_seconds"] / summary["insert_narrows_seconds"]
print()
print("medians of %d rounds                      narrows      sqlite3    ratio (sqlite3 time / narrows')" % rounds)
print("insert, one transaction             %s  %s    %.2f" % (us(summary["insert_narrows_seconds"]), us(summary["insert_sqlite3_seconds"]), summary["ratio_sqlite3_over_narrows"]))
print("add (JSON + gzip + insert)          %s" % us(summary["add_seconds"]))
print("keep (open + add + close)           %s   (a unit test held it under 50 ms)" % us(summary["keep_seconds"]))
if any(row["busy"] for row in rows):
    print("* other processes used more than %.2f of a core in a run: rerun on a quiet machine before trusting the ratio" % BUSY)

def cmd(*a):
    try:
        return subprocess.run(a, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""
machine = {"nproc": os.cpu_count(), "kernel": os.uname().release, "loadavg": open("/proc/loadavg").read().split()[:3]}
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        machine["cpu_model"] = line.split(":", 1)[1].strip()
        break
json.dump({"config": {"rounds": rounds, "count": count, "benchtime": benchtime, "dir": bench_dir.rsplit("/", 1)[0], "row": sizes},
           "machine": machine, "tools": {"go": cmd("go", "version"), "sqlite3": cmd("sqlite3", "--version"),
                                         "narrows_commit": cmd("git", "-C", os.path.dirname(out), "rev-parse", "--short", "HEAD")},
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rounds": rows, "medians": summary},
          open(out, "w"), indent=1)
print("written: %s" % out)
PY
