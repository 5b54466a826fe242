# narrows — the two commands that matter: `make run` and `make test`.
GO      ?= go
BIN     := bin/narrows
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/narrows/narrows/internal/cli.Commit=$(COMMIT)
export CGO_ENABLED := 0
# The long steps of make test say how long they took.
TIMED   := bash $(CURDIR)/scripts/timed.sh
# field is the $(1)th field of the colon-separated word $(2) (QUIETDISK's
# and FUZZ's package:test:count).
field = $(word $(1),$(subst :, ,$(2)))
# What the test targets need built first: testbins, unless make test
# built them already (NEEDBINS=): built again beside running tests, a
# program they run would be rewritten under them.
NEEDBINS ?= testbins

.PHONY: kubecheck phase2bins background phase1 experimentsci racebuild racerun fuzzbuild fuzzrun timing main build run test deps test-deps bench cross fuzz clean testbed experiments verdicts checks vet wintest testbins beside staticcheck race

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/narrows

# The main job: doctor, as a DBA starts, against an agent on loopback and a
# throwaway PostgreSQL cluster where its server programs are (else the
# database steps are skipped, saying why); the run and its HTML report stay
# in bin/run/ (RUN_DIR=…), everything else is removed. BUDGET=60s by default.
run: build
	bash scripts/run-local.sh $(BIN)

# Everything the tests need, installed when missing (Debian packages via apt-get).
test-deps:
	bash scripts/deps.sh test

# Vet, format, staticcheck, every test (real sockets, real namespaces, real
# iperf3, narrows.exe under Wine, a real browser), the race detector where
# tests run goroutines and time nothing, the cross builds, and short fuzzes
# of the frame decoder and the client's readers. After the programs the
# tests run are built (testbins, both cores), two things side by side:
#   - the background: what only compiles (phase 2 and 3's test binaries,
#     vet, staticcheck, the cross vets, the race and fuzz builds), one
#     after another at SCHED_IDLE (chrt -i 0), taking only the CPU the
#     tests leave;
#   - phase 1: the packages that assert behaviour, one at a time (main,
#     the database tests among them), beside the Wine tests and the
#     packages that mostly wait (beside).
# Then, when both have ended, alone:
#   2. the testbed's experiments and the verdict matrix's CI subset
#      (docs/verdicts.md), side by side on shares of the machine
#      (testbed.Share: the experiments that need the machine to
#      themselves first, the scenarios that do last);
#   3. the packages whose tests time the machine itself, one at a time
#      (timing);
#   4. the race and fuzz binaries the background built.
# What did not hold (docs/tests.md): the experiments beside the main lane
# (a different timing figure failed in each of three runs); the database
# tests beside the experiments on shares (one test at a time against 64,
# they waited past their ten minutes) or in a lane of their own beside
# the main lane (a different truth of theirs failed in three of five
# fresh-clone runs); the background running on into phase 2 (its race
# build's writes beside plan sync's flushes: the shares count CPU, not
# the disk).
TIMINGPKGS := ./internal/testbed/ ./internal/probe/disk/ ./internal/probe/commit/ ./internal/probe/stream/ ./internal/probe/compress/ ./internal/netio/ ./internal/client/ ./internal/sysinfo/ ./internal/uring/
BESIDE := ./internal/output/html/ ./internal/itest/mssqltest/ ./internal/agent/ ./internal/itest/hostile/
test: test-deps
	@unformatted=$$(gofmt -l cmd internal deploy); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(MAKE) testbins
	$(MAKE) -O -j2 NEEDBINS= background phase1
	$(MAKE) NEEDBINS= experimentsci
	$(MAKE) NEEDBINS= timing
	$(MAKE) NEEDBINS= racerun fuzzrun

background: $(NEEDBINS)
	chrt -i 0 $(MAKE) -j1 phase2bins vet staticcheck cross racebuild fuzzbuild kubecheck

phase1: $(NEEDBINS)
	$(MAKE) -O -j3 main wintest beside

# Test binaries built ahead (go test -c, the background's), so that no
# compile runs beside the tests that time the machine. runbin runs one
# (make's word list $(1): its package, the directory under bin/test/ it
# was built in, and the name of a fuzz target or none) in its package's
# directory, as go test runs it, with flags $(2).
# QUIETDISK are tests in the main lane's packages whose truth needs a
# disk no other process writes to (two measures of one flush held to
# agree): they run in phase 3, after the background's compiles. In phase
# 1, beside the race build writing its cache, TestPlanSyncTwoFlushes read
# the agent's flush 1.54 ms by net commit and 3.97 ms by the disk test (a
# fresh clone's CI run).
QUIETDISK := ./internal/cli/:TestPlanSyncTwoFlushes
PHASE2 := ./internal/testbed/experiments/ $(TIMINGPKGS) $(foreach q,$(QUIETDISK),$(call field,1,$(q)))
phase2bins: $(NEEDBINS)
	$(TIMED) $(GO) test -c -o $(TESTBIN)/pkg/ $(PHASE2)
runbin = (cd $(word 1,$(1)) && $(TESTENV) $(TIMED) $(TESTBIN)/$(word 2,$(1))/$(notdir $(patsubst %/,%,$(word 1,$(1)))).test $(2))

# The experiments' CI subset: 21-27 minutes in four fresh-clone runs on
# 2026-11-29 (1271-1613 s). Its timeout is a guard against a hang, not a
# budget: on a machine at half its pace (stop 44's CI run, the host
# rounds up to 251 µs a query, streams at 5.3 Gbit/s) the subset ran
# past 30 minutes.
experimentsci: $(if $(NEEDBINS),phase2bins)
	$(call runbin,./internal/testbed/experiments/ pkg,-test.count=1 -test.parallel 256 -test.timeout 45m)

# One package at a time; in each, the tests that need the machine to
# themselves take all its shares.
timing: $(if $(NEEDBINS),phase2bins)
	$(foreach p,$(TIMINGPKGS),$(call runbin,$(p) pkg,-test.count=1 -test.timeout 10m) && ) true
	$(foreach q,$(QUIETDISK),$(call runbin,$(call field,1,$(q)) pkg,-test.count=1 -test.timeout 10m -test.run '^$(call field,2,$(q))$$') && ) true

main: $(NEEDBINS)
	$(TESTENV) $(TIMED) $(GO) test -count=1 -p 1 -timeout 10m -skip '^($(subst $(eval) ,|,$(foreach q,$(QUIETDISK),$(call field,2,$(q)))))$$' $$($(GO) list ./... | grep -v -e /internal/testbed/experiments -e /internal/itest/wintest $(foreach p,$(TIMINGPKGS) $(BESIDE),-e '$(patsubst ./%/,/%,$(p))$$'))

# The programs the tests run, built once from this tree before any test,
# as the tests would build them themselves (internal/itest): narrows for
# every package that starts agents and clients, narrows.exe for the Wine
# tests. Built first and alone, each go build with both cores: what they
# compile (all of the tree for Linux, narrows for Windows; minutes with an
# empty cache) is then in the cache for vet, the cross vet and the tests,
# instead of three processes compiling it side by side, and no test's
# deadline runs over a compile.
TESTBIN := $(CURDIR)/bin/test
TESTENV := NARROWS_TEST_BIN=$(TESTBIN)/narrows NARROWS_TEST_EXE=$(TESTBIN)/narrows.exe
testbins:
	$(TIMED) $(GO) build -o $(TESTBIN)/ ./...
	GOOS=windows GOARCH=amd64 $(TIMED) $(GO) build -o $(TESTBIN)/narrows.exe ./cmd/narrows

# The checks that are not tests, each its own target (make test builds
# them in the background and runs the race and fuzz binaries last).
checks: vet cross staticcheck race fuzz

vet: $(NEEDBINS)
	$(TIMED) $(GO) vet ./...

# staticcheck, pinned: tools.mod requires it at v0.8.2 with the versions
# of its own dependencies it was released with, and tools.sum holds their
# hashes; the module proxy serves them, and go tool builds it once into
# the build cache. Not a tool of go.mod: there its dependencies would raise
# golang.org/x/net, crypto and text in narrows' own build. For Linux and
# Windows, both at once (-matrix), as narrows builds for both: a finding in
# either fails, naming it; code counts as unused only when neither build
# uses it. Measured on 2 cores: 23 s to build it the first time, 63 s
# to analyse every dependency with its cache empty, 2 s warm.
staticcheck: $(NEEDBINS)
	printf 'linux: GOOS=linux\nwindows: GOOS=windows\n' | $(TIMED) $(GO) tool -modfile=tools.mod staticcheck -matrix ./...

# The race detector (it needs cgo: gcc, from make test-deps), over the
# packages whose tests run code on two goroutines or more, and time
# nothing, start no agent, server or namespace: history (four stores
# opened at once), dbconn (the dial recorder under the drivers, a SQL
# Browser answering), output/prom (scraped by an HTTP server's goroutine
# while polls update it). Left out:
#   - pure logic whose tests run on one goroutine, where -race finds
#     nothing (advisor, arch, errext, invariants, metric, output,
#     output/table, plan, result, untrusted, wire, words, probe/dbload,
#     dbping, lograte and replication; all pass under -race, and would
#     add 10 s warm): add a package here when its tests start a goroutine;
#   - tests that time things: sysinfo (the facts' time budget, CPU
#     throttled in a cgroup), probe/compress (codec speeds; 49 s under
#     -race), client and netio (loops and bounds timed against a loopback
#     agent), probe/disk, probe/commit, probe/stream, uring;
#   - tests that start agents, servers, browsers or namespaces: agent, cli,
#     output/html, internal/itest/..., internal/testbed/...;
#   - TestHistoryRefusesBomb: it gzips 1 GiB on one goroutine (40 s under
#     -race); it runs in the main phase.
# Measured on 2 cores (another session's work beside it): 145-150 s with
# an empty build cache (the standard library, SQLite and the database
# drivers compiled for -race; history's share, SQLite's, is 68 s), 11-13 s
# with a warm one.
RACE := ./internal/dbconn/ ./internal/history/ ./internal/output/prom/
race: racebuild racerun

# The race build (the background's) and its run (beside nothing): each
# package's test binary, run in its own directory as go test would.
racebuild: $(NEEDBINS)
	CGO_ENABLED=1 $(TIMED) $(GO) test -race -c -o $(TESTBIN)/race/ $(RACE)

racerun: $(if $(NEEDBINS),racebuild)
	$(foreach p,$(RACE),$(call runbin,$(p) race,-test.count=1 -test.timeout 5m -test.skip '^TestHistoryRefusesBomb$$') && ) true

# narrows.exe under Wine (wine64 and mingw-w64 from make test-deps).
wintest: $(NEEDBINS)
	$(TESTENV) $(TIMED) $(GO) test -count=1 -timeout 5m ./internal/itest/wintest/

beside: $(NEEDBINS)
	$(TESTENV) $(TIMED) $(GO) test -count=1 -p 1 -timeout 5m $(BESIDE)

# The Kubernetes manifest (deploy/kubernetes) held to the API's own types
# by a module of its own, so that k8s.io's modules stay out of go.mod.
# Mostly a compile, so in the background: 27 s of wall time with an empty
# build cache (the standard library and k8s.io/api among it), under 1 s
# warm; its tests take 20 ms. (deploy/systemd's tests are in main's.)
kubecheck:
	cd deploy/kubernetes/check && $(TIMED) $(GO) vet ./... && $(TIMED) $(GO) test -count=1 ./...

# (The Windows binary is built by testbins, and run under Wine by
# internal/itest/wintest.)
# narrows ships for Linux and Windows (testbins builds both, vet and
# staticcheck check both). The files tagged for other systems, which
# neither compiles, are type-checked by vet for darwin, in the packages
# that hold them (scripts/other-only.sh asks go list): a darwin build
# and vet of the whole tree compiled the standard library and every
# dependency (SQLite, the database drivers) once more for nothing else,
# 132-214 s of a core in a cold CI run.
cross: $(NEEDBINS)
	GOOS=windows GOARCH=amd64 $(TIMED) $(GO) vet ./...
	pkgs=$$(bash scripts/other-only.sh) && if [ -n "$$pkgs" ]; then GOOS=darwin GOARCH=arm64 $(TIMED) $(GO) vet $$pkgs; fi

# Counted, not timed: a -fuzztime in seconds that ends while a worker is
# busy (minimising, or on a loaded machine) fails with "context deadline
# exceeded" (seen in CI beside the Wine tests); a count ends when done.
# About 10 s each on 2 idle cores. Built (the background's) apart from
# the run (beside nothing), the run with go test's own corpus cache.
FUZZ := ./internal/wire/:FuzzReadFrame:150000 ./internal/client/:FuzzClientReaders:12000
fuzz: fuzzbuild fuzzrun

fuzzbuild: $(NEEDBINS)
	$(foreach f,$(FUZZ),$(TIMED) $(GO) test -c -o $(TESTBIN)/fuzz/ -fuzz $(call field,2,$(f)) $(call field,1,$(f)) && ) true

fuzzrun: $(if $(NEEDBINS),fuzzbuild)
	$(foreach f,$(FUZZ),$(call runbin,$(call field,1,$(f)) fuzz,-test.run '^$$' -test.fuzz $(call field,2,$(f)) -test.fuzztime $(call field,3,$(f))x -test.fuzzcachedir $(FUZZCACHE)/$(patsubst ./%/,%,$(call field,1,$(f)))) && ) true
# go test -fuzz's own corpus cache, so a run of the binary and of go test
# build on each other's finds.
FUZZCACHE = $(shell $(GO) env GOCACHE)/fuzz/$(shell $(GO) list -m)

# Side-by-side with the peers (iperf3, sockperf, fio, sqlite3): prints ratios, not pass/fail.
bench: build
	bash scripts/deps.sh bench
	bash bench/net.sh
	bash bench/db.sh
	bash bench/disk.sh
	bash bench/commit.sh
	bash bench/history.sh

# Two hosts (network namespaces) joined by the WAN delay line, until Ctrl-C
# (root): make testbed TESTBED_ARGS="--rtt 40ms --rate 100M --loss 0.1%"
TESTBED_ARGS ?= --rtt 40ms --rate 100M
testbed:
	$(GO) build -o bin/narrows-testbed ./internal/testbed/cmd/narrows-testbed
	exec ./bin/narrows-testbed $(TESTBED_ARGS)

# The verdict matrix (docs/verdicts.md): every scenario, each finding code
# held where it is true and where it is false, each prediction to the real
# run; prints a row a scenario and "N passed, M failed", and rewrites the
# table in docs/verdicts.md. (make test runs its CI subset.)
verdicts: test-deps testbins
	$(TESTENV) bash -c "set -o pipefail; $(GO) test -count=1 -v -parallel 256 -timeout 40m -run '^TestVerdicts\$$' ./internal/testbed/experiments/ -args -all -write $(CURDIR)/docs/verdicts.md | grep --line-buffered -v -e '^=== ' -e '^    ' -e '^--- '"

# The testbed's experiments at full length, with the figures for docs/testbed.md.
experiments:
	NARROWS_LONG=1 $(GO) test -count=1 -v -parallel 256 -timeout 30m ./internal/testbed/experiments/

clean:
	rm -rf bin bench/out
