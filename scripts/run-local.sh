#!/usr/bin/env bash
# The main job on one machine: start an agent on loopback with a fresh
# secret, measure one stream and round trips through it, stop the agent.
# Against a real far side, run `narrows serve` there and `narrows net ... --to HOST` here.
set -euo pipefail
bin=${1:-bin/narrows}
dir=$(mktemp -d)
agent_pid=
cleanup() {
  [ -n "$agent_pid" ] && kill -INT "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
# umask 077: a secret others may read is warned about by every command.
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/secret")
"$bin" serve --listen 127.0.0.1:0 --secret-file "$dir/secret" 2> "$dir/agent.log" &
agent_pid=$!
for _ in $(seq 50); do
  addr=$(sed -n 's/.*msg="agent listening" addr=\([^ ]*\).*/\1/p' "$dir/agent.log")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "the agent did not start:"; cat "$dir/agent.log"; exit 1; }
echo "agent on $addr (loopback, so the figures are this machine's, not a network's)"
echo
"$bin" net stream --to "$addr" --secret-file "$dir/secret" --duration 5s
echo
"$bin" net rr --to "$addr" --secret-file "$dir/secret" --duration 5s
