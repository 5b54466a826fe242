// Package experiments holds the experiments of issue #5: narrows measured
// across the testbed's WAN delay line, where the truth is known (the
// line's delay, rate and loss; the kernel's window), to show how close
// narrows' readings and verdicts come to it. Each experiment is a Go test:
// short by default (CI), full length with NARROWS_LONG=1 or -args -long,
// which prints the figures docs/testbed.md records. Tests only; it needs
// root, network namespaces and TUN devices (and, for the replication
// experiments, the PostgreSQL packages), and skips (fails under CI=true)
// without them.
package experiments
