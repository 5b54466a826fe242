#!/usr/bin/env bash
# other-only.sh: the packages holding a Go file that neither the Linux
# nor the Windows build compiles (tagged for other systems), which make
# cross type-checks for darwin. From go list's own reading of the build
# constraints, so a new such file is never missed.
set -euo pipefail
cd "$(dirname "$0")/.."
list() { GOOS=$1 GOARCH=$2 go list -f '{{$p := .ImportPath}}{{range .GoFiles}}{{$p}}/{{.}}{{"\n"}}{{end}}' ./...; }
sort -u <(list linux amd64) <(list windows amd64) >"${TMPDIR:-/tmp}/other-only.$$"
list darwin arm64 | sort -u | comm -23 - "${TMPDIR:-/tmp}/other-only.$$" | sed 's#/[^/]*$##' | sort -u | sed 's#^github.com/narrows/narrows/#./#'
rm -f "${TMPDIR:-/tmp}/other-only.$$"
