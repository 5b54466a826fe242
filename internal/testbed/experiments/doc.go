// Package experiments holds the experiments of issue #5: narrows measured
// across the testbed's WAN delay line, where the truth is known (the
// line's delay, rate and loss; the kernel's window), to show how close
// narrows' readings and verdicts come to it. Each experiment is a Go test:
// short by default (CI), full length with NARROWS_LONG=1 or -args -long,
// which prints the figures docs/testbed.md records: window_linux_test.go
// (one stream against RTT), repl_linux_test.go (a PostgreSQL standby
// falling behind, keeping up, or held up by replay), maria_linux_test.go
// (the same for a MariaDB replica), sync_linux_test.go (what a
// synchronous standby costs a commit and an index rebuild),
// planreplica_linux_test.go (plan replica's predictions, held to them). Tests only; it
// needs root, network namespaces and TUN devices (and, for the database
// experiments, the PostgreSQL and MariaDB packages), and skips (fails under
// CI=true) without them.
package experiments
