#!/usr/bin/env bash
# background.sh CMD ARGS...: run make test's background work (the vets,
# staticcheck, the race and fuzz builds: compiling, nothing timed) beside
# the tests, taking only the CPU they leave:
#   - at SCHED_IDLE (chrt -i 0): a task that runs only on a core nothing
#     else wants; a test's task waking on that core takes it at once;
#   - in a cgroup of its own, narrows-background-PID, which a test that
#     needs the machine to itself (testbed.Share with every slot: a disk,
#     a codec, the hosts' share of a round trip) freezes while it runs.
# A test that dies holding the machine leaves its freeze behind: once a
# second, while no test holds the alone lock, this thaws the cgroup.
# Without root or a freezer, CMD runs at SCHED_IDLE alone, and says so.
set -u
name=narrows-background-$$
lock=${TMPDIR:-/tmp}/narrows-testbed-alone.lock
if [ -d /sys/fs/cgroup/freezer ]; then
	dir=/sys/fs/cgroup/freezer/$name state=freezer.state thawed=THAWED
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	dir=/sys/fs/cgroup/$name state=cgroup.freeze thawed=0
else
	dir=
fi
if [ -n "$dir" ] && ! mkdir "$dir" 2>/dev/null; then
	echo "background: cannot make the cgroup $dir (not root?): running at SCHED_IDLE without freezing" >&2
	dir=
fi

child=
cleanup() {
	if [ -n "$dir" ] && [ -d "$dir" ]; then
		echo "$thawed" >"$dir/$state" 2>/dev/null
	fi
	if [ -n "$child" ]; then
		kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
		wait "$child" 2>/dev/null
	fi
	if [ -n "$dir" ]; then
		rmdir "$dir" 2>/dev/null
	fi
}
trap 'cleanup; exit 130' INT TERM HUP

# The child joins the cgroup before it execs CMD, so everything CMD
# starts is in it; setsid gives it a process group to end as one.
setsid -w bash -c '[ -n "$1" ] && echo $$ >"$1/cgroup.procs"; shift; exec chrt -i 0 "$@"' _ "$dir" "$@" &
child=$!
while kill -0 "$child" 2>/dev/null; do
	sleep 1
	if [ -n "$dir" ] && [ "$(cat "$dir/$state" 2>/dev/null)" != "$thawed" ]; then
		# Shared: a test taking the machine waits until this is done.
		flock -n -s "$lock" -c "echo $thawed >'$dir/$state'" 2>/dev/null
	fi
done
wait "$child"
rc=$?
child=
cleanup
exit "$rc"
