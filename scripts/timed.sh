#!/usr/bin/env bash
# timed.sh CMD ARGS...: runs CMD, then says on stderr how long it took, so
# that make test's log shows where its minutes go.
start=$(date +%s%N)
"$@"
rc=$?
ds=$((($(date +%s%N) - start) / 100000000))
cmd="$*"
[ ${#cmd} -le 100 ] || cmd="${cmd:0:100}…"
printf '[%d.%d s] %s\n' $((ds / 10)) $((ds % 10)) "$cmd" >&2
exit $rc
