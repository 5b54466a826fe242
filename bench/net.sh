#!/usr/bin/env bash
# bench/net.sh: narrows against the reference tools, side by side, on loopback.
#
#   single-stream throughput:  narrows net stream   vs  iperf3 -c ... -P 1
#   round trips per second:    narrows net rr       vs  sockperf ping-pong --tcp
#
# Same duration, same block / message size, one stream / one connection, the
# order of the two tools alternated from round to round, medians compared.
# Everything runs against 127.0.0.1 only. See bench/README.md.
#
#   ROUNDS=3 DURATION=5 WARMUP=1 bash bench/net.sh   (the defaults; `make bench`)
#
# Exits 0 whether or not the targets are met (it is a measurement, not a
# test); exits non-zero if any tool failed to build, start or run.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}   # seconds of discarded warm-up per tool before round 1; 0: none
BLOCK=128K      # narrows --block and iperf3 -l (both binary: 131072 bytes)
MSG=64          # narrows --request/--response and sockperf -m, in bytes

case $ROUNDS in '' | *[!0-9]* | 0) echo "net.sh: ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2 ;; esac
case $DURATION in '' | *[!0-9]* | 0) echo "net.sh: DURATION must be a positive whole number of seconds, not '$DURATION'" >&2; exit 2 ;; esac
case $WARMUP in '' | *[!0-9]*) echo "net.sh: WARMUP must be a whole number of seconds, not '$WARMUP'" >&2; exit 2 ;; esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export NARROWS_BENCH_LIB=$ROOT/bench # bench/contention.py: what other processes' CPU means
OUT_DIR=$ROOT/bench/out
OUT_JSON=$OUT_DIR/net.json
RAW_DIR=$OUT_DIR/net-raw

for tool in go iperf3 sockperf python3 ss; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "net.sh: '$tool' not found (Debian: apt-get install -y iperf3 sockperf)" >&2
		exit 1
	fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/narrows-bench.XXXXXX")
PIDS=()       # servers we started, stopped by cleanup
FAILURES=0

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	local pid
	for pid in "${PIDS[@]}"; do
		kill -0 "$pid" 2>/dev/null || continue
		# narrows stops on SIGINT; iperf3/sockperf started in the background of a
		# non-interactive shell ignore SIGINT, so they get SIGTERM as well.
		kill -INT "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		local i
		for i in $(seq 1 30); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "net.sh: interrupted" >&2; exit 130' INT
trap 'echo "net.sh: terminated" >&2; exit 143' TERM

# ---------------------------------------------------------------------------
# The parser and report, in python (JSON from narrows and iperf3, text from
# sockperf). Each "parse" prints one JSON object; "report" prints the table
# and writes the JSON file.
cat >"$WORK/bench.py" <<'PY'
import json, os, re, statistics, sys

def last_json_line(path):
    lines = [l for l in open(path, encoding="utf-8", errors="replace").read().splitlines() if l.strip()]
    if not lines:
        raise ValueError("no output")
    return json.loads(lines[-1])

def parse_narrows_stream(path):
    s = last_json_line(path)
    if s.get("type") != "summary":
        raise ValueError("last line is not the summary")
    if s.get("partial"):
        raise ValueError("summary is partial (the test ended early)")
    st = s["stream"]
    run = st["runs"][0]
    cpu = run.get("cpu") or {}
    tcp = run.get("tcp") or {}
    return {
        "throughput_bits_per_second": float(st["throughput_bits_per_second"]),
        "duration_seconds": run.get("duration_seconds"),
        "retransmits": tcp.get("retransmits"),
        "cpu_local_percent_of_core": cpu.get("local_percent_of_core"),
        "cpu_remote_percent_of_core": cpu.get("remote_percent_of_core"),
    }

def parse_iperf3(path):
    d = json.load(open(path, encoding="utf-8", errors="replace"))
    if d.get("error"):
        raise ValueError("iperf3: " + d["error"])
    end = d["end"]
    cpu = end.get("cpu_utilization_percent") or {}
    return {
        # the receiver's figure: what actually arrived
        "throughput_bits_per_second": float(end["sum_received"]["bits_per_second"]),
        "sender_bits_per_second": end.get("sum_sent", {}).get("bits_per_second"),
        "duration_seconds": end["sum_received"].get("seconds"),
        "retransmits": end.get("sum_sent", {}).get("retransmits"),
        # iperf3's own rusage / wall clock, i.e. percent of one core
        "cpu_local_percent_of_core": cpu.get("host_total"),
        "cpu_remote_percent_of_core": cpu.get("remote_total"),
    }

def parse_narrows_rr(path):
    s = last_json_line(path)
    if s.get("type") != "summary":
        raise ValueError("last line is not the summary")
    if s.get("partial"):
        raise ValueError("summary is partial (the test ended early)")
    rr = s["rr"]
    cpu = rr.get("cpu") or {}
    return {
        "round_trips_per_second": float(rr["round_trips_per_second"]),
        "round_trips": rr.get("round_trips"),
        "duration_seconds": rr.get("duration_seconds"),
        "rtt_p50_seconds": float(rr["rtt_p50_seconds"]),
        "rtt_mean_seconds": rr.get("rtt_mean_seconds"),
        "rtt_p99_seconds": rr.get("rtt_p99_seconds"),
        "cpu_local_percent_of_core": cpu.get("local_percent_of_core"),
        "cpu_remote_percent_of_core": cpu.get("remote_percent_of_core"),
    }

ANSI = re.compile(r"\x1b\[[0-9;]*m")

def parse_sockperf(path):
    text = ANSI.sub("", open(path, encoding="utf-8", errors="replace").read())
    m = re.search(r"\[Valid Duration\]\s*RunTime=([0-9.]+)\s*sec;\s*SentMessages=(\d+);\s*ReceivedMessages=(\d+)", text)
    if not m:
        raise ValueError("no [Valid Duration] line in sockperf output")
    runtime, sent, received = float(m.group(1)), int(m.group(2)), int(m.group(3))
    if runtime <= 0 or received <= 0:
        raise ValueError("sockperf measured nothing")
    def half(pattern):
        mm = re.search(pattern, text)
        return float(mm.group(1)) * 1e-6 if mm else None
    p50 = half(r"percentile\s+50\.000\s*=\s*([0-9.]+)")
    if p50 is None:
        raise ValueError("no 'percentile 50.000' in sockperf output")
    mean = half(r"avg-latency=([0-9.]+)")
    p99 = half(r"percentile\s+99\.000\s*=\s*([0-9.]+)")
    # sockperf reports HALF the round trip (latency = RTT/2); double it.
    return {
        "round_trips_per_second": received / runtime,
        "round_trips": received,
        "duration_seconds": runtime,
        "rtt_p50_seconds": 2 * p50,
        "rtt_mean_seconds": 2 * mean if mean is not None else None,
        "rtt_p99_seconds": 2 * p99 if p99 is not None else None,
        "half_rtt_p50_usec_as_printed": p50 * 1e6,
    }

CONTENTION = 0.25  # cores used by other processes during a run that make it suspect

PARSERS = {
    "narrows-stream": parse_narrows_stream,
    "iperf3": parse_iperf3,
    "narrows-rr": parse_narrows_rr,
    "sockperf": parse_sockperf,
}

def gbit(v):
    return "-" if v is None else "%.2f Gbit/s" % (v / 1e9)

def rtps(v):
    return "-" if v is None else "{:,.0f}/s".format(v)

def usec(v):
    return "-" if v is None else "%.1f us" % (v * 1e6)

def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b

def fratio(r):
    return "-" if r is None else "%.3f" % r

def median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None

def report(results_path, facts_path, out_path):
    results = [json.loads(l) for l in open(results_path) if l.strip()]
    facts = json.load(open(facts_path))
    rounds = facts["config"]["rounds"]

    def get(rnd, tool, key):
        for r in results:
            if r["round"] == rnd and r["tool"] == tool and r["ok"]:
                return r["figures"].get(key)
        return None

    def busy(rnd, tool):
        for r in results:
            if r["round"] == rnd and r["tool"] == tool:
                return (r.get("other_cpu_cores") or 0) > CONTENTION
        return False

    def cell(rnd, tool, v, fmt):
        if v is None:
            return "FAILED"
        return fmt(v) + (" *" if busy(rnd, tool) else "")

    def order(rnd, test):
        return [r["tool"] for r in results if r["round"] == rnd and r["test"] == test]

    comparisons = {
        "single_stream_throughput": ("stream", "narrows-stream", "iperf3", "throughput_bits_per_second", gbit),
        "round_trips_per_second": ("rr", "narrows-rr", "sockperf", "round_trips_per_second", rtps),
    }

    W = 78
    print()
    print("=" * W)
    print("narrows vs iperf3 / sockperf on loopback: %d round(s) of %ds each" % (rounds, facts["config"]["duration_seconds"]))
    print("%s, %s CPUs, kernel %s, load before %s" % (facts["machine"].get("cpu_model") or "?", facts["machine"]["nproc"], facts["machine"]["kernel"], facts["machine"]["loadavg_before"]))
    print("=" * W)

    summary = {}
    for name, (test, a, b, key, fmt) in comparisons.items():
        title = {"stream": "(a) single-stream throughput, 1 stream, %s blocks (higher is better)" % facts["config"]["block"],
                 "rr": "(b) round trips per second, %d B request / %d B response, 1 connection (higher is better)" % (facts["config"]["message_bytes"], facts["config"]["message_bytes"])}[test]
        print()
        print(title)
        hdr = "  %-7s %-22s %-16s %-16s %-8s" % ("round", "order", a, b, "ratio")
        if test == "rr":
            hdr += " %-10s %-10s" % ("p50 RTT n", "p50 RTT s")
        print(hdr)
        per_round = []
        for rnd in range(1, rounds + 1):
            va, vb = get(rnd, a, key), get(rnd, b, key)
            ra = ratio(va, vb)
            o = " then ".join("narrows" if t.startswith("narrows") else t for t in order(rnd, test))
            line = "  %-7s %-22s %-16s %-16s %-8s" % (rnd, o, cell(rnd, a, va, fmt), cell(rnd, b, vb, fmt), fratio(ra))
            entry = {"round": rnd, "order": order(rnd, test), a: va, b: vb, "ratio": ra}
            if test == "rr":
                pa, pb = get(rnd, a, "rtt_p50_seconds"), get(rnd, b, "rtt_p50_seconds")
                line += " %-10s %-10s" % (usec(pa), usec(pb))
                entry[a + "_rtt_p50_seconds"] = pa
                entry[b + "_rtt_p50_seconds"] = pb
            print(line)
            per_round.append(entry)
        ma = median([e[a] for e in per_round])
        mb = median([e[b] for e in per_round])
        r = ratio(ma, mb)
        vals_a = [e[a] for e in per_round if e[a] is not None]
        vals_b = [e[b] for e in per_round if e[b] is not None]
        def spread(vals):
            if len(vals) < 2 or not median(vals):
                return None
            return (max(vals) - min(vals)) / median(vals)
        line = "  %-7s %-22s %-16s %-16s %-8s" % ("median", "", fmt(ma), fmt(mb), fratio(r))
        entry = {
            "unit": "bits_per_second" if test == "stream" else "round_trips_per_second",
            "rounds": per_round,
            "median": {a: ma, b: mb},
            "spread_max_minus_min_over_median": {a: spread(vals_a), b: spread(vals_b)},
            "ratio_narrows_over_peer": r,
            "target_ratio_at_least": 1.0,
            "target_met": (r is not None and r >= 1.0),
        }
        if test == "rr":
            pa = median([e[a + "_rtt_p50_seconds"] for e in per_round])
            pb = median([e[b + "_rtt_p50_seconds"] for e in per_round])
            line += " %-10s %-10s" % (usec(pa), usec(pb))
            entry["rtt_p50_seconds_median"] = {a: pa, b: pb}
            entry["rtt_p50_ratio_narrows_over_peer"] = ratio(pa, pb)
            entry["note"] = "sockperf prints half the round trip; its p50 here is 2 x 'percentile 50.000', and its rate is ReceivedMessages / RunTime of [Valid Duration]"
        print(line)
        sa, sb = entry["spread_max_minus_min_over_median"][a], entry["spread_max_minus_min_over_median"][b]
        if sa is not None and sb is not None:
            print("  spread between rounds (max-min)/median: %s %.1f%%, %s %.1f%%" % (a, 100 * sa, b, 100 * sb))
        summary[name] = entry

    print()
    print("targets (ratio narrows/peer from the medians, >= 1.0):")
    for name, label in (("single_stream_throughput", "single-stream throughput vs iperf3 "),
                        ("round_trips_per_second", "round trips per second vs sockperf ")):
        e = summary[name]
        r = e["ratio_narrows_over_peer"]
        verdict = "MET" if e["target_met"] else ("NOT MET" if r is not None else "UNKNOWN (a tool failed)")
        print("  %s ratio %-6s >= 1.0  %s" % (label, fratio(r), verdict))
    e = summary["round_trips_per_second"]
    pa = e["rtt_p50_seconds_median"]["narrows-rr"]
    pb = e["rtt_p50_seconds_median"]["sockperf"]
    print("  full-RTT p50 (informational, lower is better): narrows %s, sockperf %s (2 x its half RTT)" % (usec(pa), usec(pb)))

    failed = [r for r in results if not r["ok"]]
    if failed:
        print()
        print("FAILED runs:")
        for r in failed:
            print("  round %d %s: %s" % (r["round"], r["tool"], r.get("error")))

    others = [r["other_cpu_cores"] for r in results if r.get("other_cpu_cores") is not None]
    contention = {
        "other_cpu_cores_median": median(others),
        "other_cpu_cores_max": max(others) if others else None,
        "busy_runs": [{"round": r["round"], "tool": r["tool"], "other_cpu_cores": r["other_cpu_cores"]}
                      for r in results if (r.get("other_cpu_cores") or 0) > CONTENTION],
        "threshold_cores": CONTENTION,
    }
    print()
    if others:
        print("other processes' CPU during the runs: median %.2f, max %.2f cores (of %s)"
              % (contention["other_cpu_cores_median"], contention["other_cpu_cores_max"], facts["machine"]["nproc"]))
    if contention["busy_runs"]:
        print("note (* above): other work competed for the CPU in %d of %d runs (> %.2f cores: %s);"
              % (len(contention["busy_runs"]), len(results), CONTENTION,
                 ", ".join("r%d %s %.2f" % (b["round"], b["tool"], b["other_cpu_cores"]) for b in contention["busy_runs"])))
        print("      loopback figures are CPU-bound, so those runs are skewed: rerun on a quiet machine to trust the ratios.")

    doc = {
        "schema": "narrows-bench-net/v1",
        "date": facts["date"],
        "config": facts["config"],
        "machine": facts["machine"],
        "tools": facts["tools"],
        "comparisons": summary,
        "runs": results,
        "contention": contention,
        "failures": len(failed),
        "raw_output_dir": facts.get("raw_output_dir"),
    }
    with open(out_path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(out_path + ".tmp", out_path)
    print()
    print("wrote %s" % out_path)

sys.path.insert(0, os.environ["NARROWS_BENCH_LIB"])
from contention import busy_ticks as cpu_ticks

def proc_ticks(pid):
    try:
        data = open("/proc/%d/stat" % pid).read()
    except OSError:
        return 0
    f = data[data.rindex(")") + 2:].split()
    return int(f[11]) + int(f[12])  # utime + stime, all threads

def run_measured(meta, out, err, limit, pids, cmd):
    """Run one client with a time limit; measure how much CPU everything else
    on the machine used meanwhile (contention skews loopback figures)."""
    import resource, signal, subprocess, time
    hz = os.sysconf("SC_CLK_TCK")
    child = {}
    def on_term(signum, frame):
        p = child.get("p")
        if p and p.poll() is None:
            p.kill()
            p.wait()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    signal.signal(signal.SIGTERM, on_term)
    t0, s0 = cpu_ticks(), sum(proc_ticks(p) for p in pids)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.monotonic()
    with open(out, "w") as fo, open(err, "w") as fe:
        p = child["p"] = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            fe.write("\nnet.sh: killed after %ss\n" % limit)
            rc = 124
        except KeyboardInterrupt:  # Ctrl-C reached the client too; let it go
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
    wall = time.monotonic() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t1, s1 = cpu_ticks(), sum(proc_ticks(p) for p in pids)
    own = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime) + (s1 - s0) / hz
    total = (t1 - t0) / hz
    json.dump({
        "exit_code": rc,
        "wall_seconds": wall,
        "own_cpu_cores": own / wall if wall else None,
        "other_cpu_cores": max(0.0, total - own) / wall if wall else None,
    }, open(meta, "w"))

def main():
    cmd = sys.argv[1]
    if cmd == "run":
        # run META OUT ERR LIMIT "PID PID.." CMD...
        meta, out, err, limit, pids = sys.argv[2:7]
        run_measured(meta, out, err, float(limit), [int(x) for x in pids.split()], sys.argv[7:])
        return
    if cmd == "parse":
        tool, path = sys.argv[2], sys.argv[3]
        try:
            figures = PARSERS[tool](path)
        except Exception as e:  # report, don't crash: the run is marked failed
            print(json.dumps({"ok": False, "error": "%s: %s" % (type(e).__name__, e)}))
            return
        print(json.dumps({"ok": True, "figures": figures}))
    elif cmd == "ok":
        print("1" if json.loads(sys.argv[2])["ok"] else "0")
    elif cmd == "show":
        # show TEST RECORD: the progress line for one run
        test, r = sys.argv[2], json.loads(sys.argv[3])
        if not r["ok"]:
            print("  %-15s FAILED: %s" % (r["tool"], r.get("error")))
            return
        f = r["figures"]
        if test == "stream":
            fig = gbit(f["throughput_bits_per_second"])
        else:
            fig = "%s, p50 RTT %s" % (rtps(f["round_trips_per_second"]), usec(f["rtt_p50_seconds"]))
        oc = r.get("other_cpu_cores")
        print("  %-15s %-32s%s" % (r["tool"], fig, "" if oc is None else "(other processes: %.2f cores%s)" % (oc, ", BUSY" if oc > CONTENTION else "")))
    elif cmd == "record":
        # record ROUND TEST TOOL POSITION META PARSED: one line of results.jsonl
        rnd, test, tool, pos, meta, parsed = sys.argv[2:8]
        d = json.loads(parsed)
        m = json.load(open(meta))
        rc = m["exit_code"]
        rec = {"round": int(rnd), "test": test, "tool": tool, "position": int(pos), "exit_code": rc,
               "wall_seconds": m["wall_seconds"], "own_cpu_cores": m["own_cpu_cores"],
               "other_cpu_cores": m["other_cpu_cores"]}
        if rc != 0:
            d = {"ok": False, "error": "exit code %s%s" % (rc, "; " + d["error"] if d.get("error") else "")}
        rec.update(d)
        print(json.dumps(rec))
    elif cmd == "report":
        report(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("bench.py: unknown command " + cmd)

main()
PY
bench() { python3 "$WORK/bench.py" "$@"; }

# ---------------------------------------------------------------------------
# Ports: outside the usual ephemeral range (32768-60999), so the clients'
# own source ports cannot collide with them, and free when we look.
port_is_free() {
	python3 - "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}
USED_PORTS=" "
pick_port() { # pick_port VAR: sets VAR (not $(...): USED_PORTS must persist)
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 10000))
		case $USED_PORTS in *" $p "*) continue ;; esac
		if port_is_free "$p"; then
			USED_PORTS+="$p "
			printf -v "$1" '%s' "$p"
			return 0
		fi
	done
	echo "net.sh: no free port found in 20000-29999" >&2
	return 1
}

# wait_listen PORT PID NAME: until something listens on 127.0.0.1:PORT
wait_listen() {
	local port=$1 pid=$2 name=$3 i
	for i in $(seq 1 100); do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "net.sh: $name exited at start; its log:" >&2
			cat "$WORK/$name.log" >&2 || true
			return 1
		fi
		if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
			return 0
		fi
		sleep 0.1
	done
	echo "net.sh: $name did not listen on 127.0.0.1:$port within 10s; its log:" >&2
	cat "$WORK/$name.log" >&2 || true
	return 1
}

# ---------------------------------------------------------------------------
echo "net.sh: building narrows ..."
BIN=$WORK/narrows
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$BIN" ./cmd/narrows)

if [ -z "${NARROWS_SECRET:-}" ]; then
	NARROWS_SECRET=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
fi
export NARROWS_SECRET

pick_port P0
pick_port P1
pick_port P2

"$BIN" serve --listen "127.0.0.1:$P0" 2>"$WORK/narrows-agent.log" >&2 &
PIDS+=($!)
wait_listen "$P0" "$!" narrows-agent
# the agent says so itself once it is ready
for i in $(seq 1 50); do
	grep -q 'msg="agent listening"' "$WORK/narrows-agent.log" && break
	sleep 0.1
done

iperf3 -s -B 127.0.0.1 -p "$P1" >"$WORK/iperf3-server.log" 2>&1 &
PIDS+=($!)
wait_listen "$P1" "$!" iperf3-server

sockperf server --tcp -i 127.0.0.1 -p "$P2" >"$WORK/sockperf-server.log" 2>&1 &
PIDS+=($!)
wait_listen "$P2" "$!" sockperf-server

echo "net.sh: narrows agent on 127.0.0.1:$P0, iperf3 -s on :$P1, sockperf server on :$P2"

# ---------------------------------------------------------------------------
# Machine facts and configuration.
first_line() { "$@" 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' | grep -v '^[[:space:]]*$' | head -n 1 || true; }
NPROC=$(nproc)
KERNEL=$(uname -r)
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | sed 's/^model name[[:space:]]*:[[:space:]]*//' || true)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
V_NARROWS=$(first_line "$BIN" version)
V_IPERF3=$(first_line iperf3 --version)
V_SOCKPERF=$(sockperf --version 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' | grep -m1 -i 'version' || true)
V_GO=$(go version)
GIT_COMMIT=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
GIT_DIRTY=$(if [ -n "$(git -C "$ROOT" --no-optional-locks status --porcelain 2>/dev/null | head -n 1)" ]; then echo true; else echo false; fi)

RESULTS=$WORK/results.jsonl
: >"$RESULTS"
rm -rf "$RAW_DIR"
mkdir -p "$OUT_DIR" "$RAW_DIR"

LIMIT=$((DURATION + 30))   # a hung client is killed, and counted as failed

# client_cmd TOOL SECONDS: the command line of one client run
client_cmd() {
	case $1 in
	narrows-stream) CMD=("$BIN" net stream --to "127.0.0.1:$P0" --duration "${2}s" --block "$BLOCK" --json) ;;
	iperf3) CMD=(iperf3 -c 127.0.0.1 -p "$P1" -P 1 -t "$2" -l "$BLOCK" -J) ;;
	narrows-rr) CMD=("$BIN" net rr --to "127.0.0.1:$P0" --duration "${2}s" --request "${MSG}B" --response "${MSG}B" --json) ;;
	sockperf) CMD=(sockperf ping-pong --tcp -i 127.0.0.1 -p "$P2" -m "$MSG" -t "$2") ;;
	esac
}

run_tool() { # run_tool ROUND TEST TOOL POSITION
	local rnd=$1 test=$2 tool=$3 pos=$4
	local out=$RAW_DIR/round$rnd-$tool.out err=$RAW_DIR/round$rnd-$tool.err meta=$WORK/round$rnd-$tool.meta
	client_cmd "$tool" "$DURATION"
	bench run "$meta" "$out" "$err" "$LIMIT" "${PIDS[*]}" "${CMD[@]}"
	local parsed line
	parsed=$(bench parse "$tool" "$out")
	line=$(bench record "$rnd" "$test" "$tool" "$pos" "$meta" "$parsed")
	printf '%s\n' "$line" >>"$RESULTS"
	bench show "$test" "$line"
	if [ "$(bench ok "$line")" != 1 ]; then
		FAILURES=$((FAILURES + 1))
		local tail_of=$err
		[ -s "$err" ] || tail_of=$out
		sed -e 's/\x1b\[[0-9;]*m//g; s/^/      | /' "$tail_of" | tail -n 5
	fi
	return 0
}

echo "net.sh: $ROUNDS round(s), ${DURATION}s per run, 4 runs per round, ${WARMUP}s warm-up per tool (about $((ROUNDS * 4 * (DURATION + 1) + (WARMUP > 0 ? 4 * (WARMUP + 1) : 0)))s)"

# A short warm-up of each tool, thrown away, so that no tool pays for the
# first connection, page faults or clock ramp-up in round 1. Its failures
# surface in the measured rounds.
if [ "$WARMUP" -gt 0 ]; then
	echo "warm-up (${WARMUP}s each, discarded)"
	for tool in narrows-stream iperf3 narrows-rr sockperf; do
		client_cmd "$tool" "$WARMUP"
		bench run "$WORK/warmup-$tool.meta" "$RAW_DIR/warmup-$tool.out" "$RAW_DIR/warmup-$tool.err" "$LIMIT" "${PIDS[*]}" "${CMD[@]}"
	done
fi


for rnd in $(seq 1 "$ROUNDS"); do
	echo "round $rnd/$ROUNDS"
	if [ $((rnd % 2)) -eq 1 ]; then
		run_tool "$rnd" stream narrows-stream 1
		run_tool "$rnd" stream iperf3 2
		run_tool "$rnd" rr narrows-rr 1
		run_tool "$rnd" rr sockperf 2
	else
		run_tool "$rnd" stream iperf3 1
		run_tool "$rnd" stream narrows-stream 2
		run_tool "$rnd" rr sockperf 1
		run_tool "$rnd" rr narrows-rr 2
	fi
done

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
cp "$WORK/narrows-agent.log" "$WORK/iperf3-server.log" "$WORK/sockperf-server.log" "$RAW_DIR/" 2>/dev/null || true

export BF_DATE=$DATE BF_ROUNDS=$ROUNDS BF_DURATION=$DURATION BF_WARMUP=$WARMUP BF_BLOCK=$BLOCK BF_MSG=$MSG \
	BF_NPROC=$NPROC BF_KERNEL=$KERNEL BF_CPU_MODEL=$CPU_MODEL BF_LOAD_BEFORE=$LOAD_BEFORE BF_LOAD_AFTER=$LOAD_AFTER \
	BF_V_NARROWS=$V_NARROWS BF_GIT_COMMIT=$GIT_COMMIT BF_GIT_DIRTY=$GIT_DIRTY BF_V_GO=$V_GO \
	BF_V_IPERF3=$V_IPERF3 BF_V_SOCKPERF=$V_SOCKPERF BF_RAW_DIR=$RAW_DIR
python3 - "$WORK/facts.json" <<'PY'
import json, os, sys
e = os.environ
d, m, b = int(e["BF_DURATION"]), int(e["BF_MSG"]), e["BF_BLOCK"]
facts = {
    "date": e["BF_DATE"],
    "config": {
        "rounds": int(e["BF_ROUNDS"]),
        "duration_seconds": d,
        "warmup_seconds_per_tool_discarded": int(e["BF_WARMUP"]),
        "block": b,
        "block_bytes": 131072,
        "message_bytes": m,
        "streams": 1,
        "address": "127.0.0.1",
        "order": "odd rounds: narrows first, then the peer; even rounds: the peer first",
        "commands": {
            "narrows_stream": "narrows net stream --to 127.0.0.1:PORT --duration %ds --block %s --json" % (d, b),
            "iperf3": "iperf3 -c 127.0.0.1 -p PORT -P 1 -t %d -l %s -J  (end.sum_received.bits_per_second)" % (d, b),
            "narrows_rr": "narrows net rr --to 127.0.0.1:PORT --duration %ds --request %dB --response %dB --json" % (d, m, m),
            "sockperf": "sockperf ping-pong --tcp -i 127.0.0.1 -p PORT -m %d -t %d  (rate = ReceivedMessages / RunTime of [Valid Duration]; RTT = 2 x its half RTT)" % (m, d),
        },
    },
    "machine": {
        "nproc": int(e["BF_NPROC"]),
        "kernel": e["BF_KERNEL"],
        "cpu_model": e["BF_CPU_MODEL"],
        "loadavg_before": e["BF_LOAD_BEFORE"],
        "loadavg_after": e["BF_LOAD_AFTER"],
    },
    "tools": {
        "narrows": e["BF_V_NARROWS"],
        "narrows_git_commit": e["BF_GIT_COMMIT"],
        "narrows_git_dirty": e["BF_GIT_DIRTY"] == "true",
        "go": e["BF_V_GO"],
        "iperf3": e["BF_V_IPERF3"],
        "sockperf": e["BF_V_SOCKPERF"],
    },
    "raw_output_dir": e["BF_RAW_DIR"],
}
json.dump(facts, open(sys.argv[1], "w"))
PY

bench report "$RESULTS" "$WORK/facts.json" "$OUT_JSON"

if [ "$FAILURES" -gt 0 ]; then
	echo "net.sh: $FAILURES run(s) failed; the figures above are incomplete" >&2
	exit 1
fi
exit 0
