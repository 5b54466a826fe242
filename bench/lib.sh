# bench/lib.sh: what the bench scripts share, sourced after NAME is set
# (the script's name for its messages): their settings' checks, the tools
# they need, and the scratch directories they remove however they end.

# positive VAR...: each variable holds a positive whole number, else exit 2.
positive() {
	local v
	for v in "$@"; do
		case ${!v} in '' | *[!0-9]* | 0) echo "$NAME: $v must be a positive whole number, not '${!v}'" >&2; exit 2 ;; esac
	done
}

# isdir VAR: the variable names a directory, else exit 2.
isdir() { [ -d "${!1}" ] || { echo "$NAME: $1=${!1} is not a directory" >&2; exit 2; }; }

# need PACKAGES -- TOOL...: each tool on the PATH, else say which Debian
# packages give them and exit 1.
need() {
	local pkgs=() t
	while [ $# -gt 0 ] && [ "$1" != -- ]; do pkgs+=("$1"); shift; done
	shift
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || { echo "$NAME: '$t' not found (Debian: apt-get install -y ${pkgs[*]})" >&2; exit 1; }
	done
}

# scratch: WORK (narrows' build, logs) and BENCH_DIR (the files measured,
# in $DIR), both removed at exit, and interruptions said; a script that
# starts something of its own stops it in an on_exit function.
scratch() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/narrows-bench-${NAME%.sh}.XXXXXX")
	BENCH_DIR=$(mktemp -d "$DIR/narrows-bench.XXXXXX")
	trap bench_cleanup EXIT
	trap 'echo; echo "$NAME: interrupted" >&2; exit 130' INT
	trap 'echo "$NAME: terminated" >&2; exit 143' TERM
}

# stop_pids: each process in PIDS asked to stop (SIGINT), given 5 s, then
# killed, and reaped: a script that starts processes of its own keeps
# their pids in PIDS and calls this from its on_exit.
stop_pids() {
	local pid
	for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}

# start_agent LOG ARGS...: narrows serve ($WORK/narrows) on loopback with
# ARGS, its standard error to LOG and its pid added to PIDS; AGENT_ADDR is
# where it listens once it says so (within 10 s), else exit 1 with its log.
start_agent() {
	local log=$1
	shift
	"$WORK/narrows" serve --listen 127.0.0.1:0 "$@" 2>"$log" &
	PIDS+=($!)
	for _ in $(seq 1 100); do grep -q 'agent listening' "$log" && break; sleep 0.1; done
	AGENT_ADDR=$(sed -n 's/.*msg="agent listening" addr=\([^ ]*\).*/\1/p' "$log" | head -1)
	[ -n "$AGENT_ADDR" ] || { echo "$NAME: an agent did not start:" >&2; cat "$log" >&2; exit 1; }
}

bench_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if declare -F on_exit >/dev/null; then on_exit; fi
	rm -rf "$WORK" "$BENCH_DIR"
	exit "$rc"
}
