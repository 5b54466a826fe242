#!/usr/bin/env bash
# The main job on one machine: doctor, as a DBA starts, against an agent
# on loopback and, when PostgreSQL's server programs are here, a throwaway
# PostgreSQL cluster (else doctor skips the database steps and says why).
# It prints the answers and writes the run and its HTML report under
# bin/run/ (RUN_DIR), whose paths it prints; everything else it made (the
# secret, the agent's and the cluster's directories, the cluster itself)
# is removed when it ends, however it ends.
# Against real hosts: `narrows serve` on the standby's host, then
# `narrows doctor --to HOST --dsn …` on the primary (narrows help).
set -euo pipefail
bin=${1:-bin/narrows}
out=${RUN_DIR:-bin/run}
budget=${BUDGET:-60s}
mkdir -p "$out"
dir=$(mktemp -d)
agent_pid=
pg_ctl=
cleanup() {
  [ -n "$agent_pid" ] && kill -INT "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null || true
  [ -n "$pg_ctl" ] && as_pg "$pg_ctl" -D "$dir/pg/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# PostgreSQL will not run as root: as its own user then (Debian's package makes it).
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# umask 077: a secret others may read is warned about by every command.
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/secret")
mkdir -p "$dir/agent-disk" "$dir/data" "$dir/log"
"$bin" serve --listen 127.0.0.1:0 --secret-file "$dir/secret" --disk-path "$dir/agent-disk" 2> "$dir/agent.log" &
agent_pid=$!
addr=
for _ in $(seq 50); do
  addr=$(sed -n 's/.*msg="agent listening" addr=\([^ ]*\).*/\1/p' "$dir/agent.log")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "the agent did not start:"; cat "$dir/agent.log"; exit 1; }
echo "agent on $addr (loopback, so the figures are this machine's, not a network's)"

# A throwaway cluster, its password random, given to doctor through
# NARROWS_DSN (not on its command line, where ps would show it).
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -n "$pgbin" ] && [ -x "$pgbin/pg_ctl" ] && { [ "$(id -u)" != 0 ] || id postgres >/dev/null 2>&1; }; then
  mkdir -p "$dir/pg"
  (umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/pg/pw")
  [ "$(id -u)" = 0 ] && chown -R postgres "$dir/pg" && chmod 755 "$dir"
  if as_pg "$pgbin/initdb" -D "$dir/pg/data" -U postgres --pwfile "$dir/pg/pw" -A scram-sha-256 >"$dir/pg/initdb.log" 2>&1; then
    for _ in 1 2 3; do
      port=$((20000 + RANDOM % 20000))
      if as_pg "$pgbin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/log" -w -t 30 \
          -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir/pg" start >/dev/null 2>&1; then
        pg_ctl=$pgbin/pg_ctl
        export NARROWS_DSN="postgres://postgres:$(cat "$dir/pg/pw")@127.0.0.1:$port/postgres?sslmode=disable"
        echo "a throwaway PostgreSQL $("$pgbin/postgres" --version | sed 's/^[^0-9]*\([0-9.]*\).*/\1/') on 127.0.0.1:$port, removed at the end"
        break
      fi
    done
  fi
  [ -n "$pg_ctl" ] || echo "PostgreSQL's programs are here but a cluster did not start: doctor skips the database steps"
else
  echo "no PostgreSQL server programs here: doctor skips the database steps and says why"
fi
echo

stamp=$(date +%Y%m%d-%H%M%S)
run="$out/narrows-doctor-$stamp.jsonl"
code=0
"$bin" doctor --to "$addr" --secret-file "$dir/secret" --budget "$budget" \
  --data-path "$dir/data" --log-path "$dir/log" --backup-path "$dir/agent-disk" \
  --out "$run" --html "${run%.jsonl}.html" || code=$?
exit "$code"
