// Command narrows-testbed sets up two hosts (network namespaces) joined by
// the testbed's WAN delay line, prints how to use them, and keeps the line
// running until Ctrl-C, then tears everything down:
//
//	narrows-testbed --rtt 40ms --rate 100M --loss 0.1% --jitter 1ms
//
// It needs root and Linux. Bad flags get one line and exit code 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/narrows/narrows/internal/testbed"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// run is the whole command; ready, when set, gets the line once it is up
// (for tests). It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(*testbed.DelayLine)) int {
	cfg, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "narrows-testbed: %s\n", ue.msg)
		return 2
	}
	setup, cancel := context.WithTimeout(ctx, 30*time.Second)
	l, err := testbed.NewDelayLine(setup, cfg.opts)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "narrows-testbed: %v\n", err)
		return 1
	}
	printBanner(stdout, l)
	if ready != nil {
		ready(l)
	}
	var tick <-chan time.Time
	if cfg.stats > 0 {
		t := time.NewTicker(cfg.stats)
		defer t.Stop()
		tick = t.C
	}
	code := 0
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-tick:
			printStats(stdout, l.Stats())
		}
		if err := l.Err(); err != nil {
			fmt.Fprintf(stderr, "narrows-testbed: the line stopped: %v\n", err)
			code = 1
			break
		}
	}
	fmt.Fprintln(stdout, "\nstopping: final counters")
	printStats(stdout, l.Stats())
	if err := l.Close(); err != nil {
		fmt.Fprintf(stderr, "narrows-testbed: teardown: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed %s and %s\n", l.A.NS, l.B.NS)
	return code
}

func printBanner(w io.Writer, l *testbed.DelayLine) {
	o := l.Options
	fmt.Fprintf(w, "narrows-testbed: a delay line is up (MTU %d, seed %d)\n", o.MTU, o.Seed)
	fmt.Fprintf(w, "  a → b: %s\n  b → a: %s\n", o.AtoB, o.BtoA)
	if !l.Realtime() && !o.NoRealtime {
		fmt.Fprintln(w, "  (real-time priority refused: on a busy machine delays will be less precise)")
	}
	if err := l.Awake(); err != nil {
		fmt.Fprintf(w, "  (%v: on a virtual machine packets may leave tens of µs to ms late whenever a CPU was idle)\n", err)
	}
	for _, h := range l.Hosts() {
		fmt.Fprintf(w, "  host %s: namespace %s, address %s (device %s)\n", h.Name, h.NS, h.Addr, h.Dev)
	}
	fmt.Fprintf(w, "Run commands on a host with `ip netns exec NAMESPACE COMMAND`, e.g.:\n")
	fmt.Fprintf(w, "  ip netns exec %s narrows serve --listen %s:7447 --secret-file narrows.secret\n", l.B.NS, l.B.Addr)
	fmt.Fprintf(w, "  ip netns exec %s narrows net stream --to %s --secret-file narrows.secret\n", l.A.NS, l.B.Addr)
	fmt.Fprintf(w, "  ip netns exec %s ping -c 5 %s\n", l.A.NS, l.B.Addr)
	fmt.Fprintln(w, "Ctrl-C stops the line and removes both hosts.")
}

func printStats(w io.Writer, s testbed.DelayLineStats) {
	for _, d := range []struct {
		name string
		p    testbed.PathStats
	}{{"a → b", s.AtoB}, {"b → a", s.BtoA}} {
		fmt.Fprintf(w, "  %s: %d packets, %d bytes delivered; dropped %d at random, %d by a full queue, %d over the held limit; %d held now; written late by %v on average, %v at most (%d over 1 ms)\n",
			d.name, d.p.Packets, d.p.Bytes, d.p.DroppedLoss, d.p.DroppedQueue, d.p.DroppedHeld, d.p.Held,
			d.p.LateMean().Round(time.Microsecond), d.p.LateMax.Round(time.Microsecond), d.p.LateOver1ms)
		if d.p.ModerationHeld > 0 {
			fmt.Fprintf(w, "    held by the receiver's interrupt moderation: %d packets, %v each on average; %d delivered by its timer\n",
				d.p.ModerationHeld, (d.p.ModerationWait / time.Duration(d.p.ModerationHeld)).Round(time.Microsecond), d.p.ModerationTimeouts)
		}
	}
}
