#!/usr/bin/env bash
# Installs what `make test` (or `make bench`) needs when it is missing, so
# the README's commands work on a fresh Debian machine. Idempotent.
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null 2>&1; }
have go || { echo "deps: Go is not installed: install Go 1.26 or later (https://go.dev/dl/)" >&2; exit 2; }
have ip   || need+=(iproute2)
have tc   || need+=(iproute2)
have iperf3 || need+=(iperf3)
have ethtool || [ -x /usr/sbin/ethtool ] || need+=(ethtool)   # the packet-core scenario turns a veth's offloads off; TestDelayLineModeration sets TUN devices' rx-frames
# db tests: a PostgreSQL primary and standby (initdb, pg_basebackup, pgbench)
# and a MariaDB source and replica, started from Debian's packages.
ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/pg_basebackup >/dev/null 2>&1 || need+=(postgresql postgresql-contrib)
{ have mariadbd || [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ]; } && have mariadb-install-db || need+=(mariadb-server)
have mariadb || need+=(mariadb-client)
have losetup || need+=(mount)   # the disk tests read a loop device
have mkfs.xfs || need+=(xfsprogs)   # and time buffered writes on XFS, which end within their submitting call
have chromium || need+=(chromium)   # the HTML report's browser test opens reports in headless Chromium
# the Windows build's tests run narrows.exe under Wine, with a DLL built by mingw-w64
{ [ -x /usr/lib/wine/wine64 ] || have wine64; } || need+=(wine64)
have x86_64-w64-mingw32-gcc || need+=(gcc-mingw-w64-x86-64)
# the log flush's tests hold narrows to fio (and pg_test_fsync, above) with the same pattern
have fio || need+=(fio)
# deploy/systemd's tests: systemd-analyze verify and systemd-sysusers
# (systemd as PID 1 is not needed), and the unit's command line run in a
# network namespace as its user (util-linux: unshare, nsenter, setpriv)
have systemd-analyze && have systemd-sysusers || need+=(systemd)
have unshare && have nsenter && have setpriv || need+=(util-linux)
# make race (in make test's checks) builds with cgo, as -race needs
{ have gcc && [ -e /usr/include/stdlib.h ]; } || need+=(gcc libc6-dev)
if [ "${1:-test}" = bench ]; then
  have sockperf || need+=(sockperf)
  have sqlite3 || need+=(sqlite3)   # bench/history.sh's peer
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "deps: missing ${need[*]}: run as root, or: sudo apt-get install -y ${need[*]}" >&2
    exit 2
  fi
  echo "deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
go mod download
(cd deploy/kubernetes/check && go mod download)   # make kubecheck's module
