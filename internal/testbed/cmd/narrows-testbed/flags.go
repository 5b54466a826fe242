package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/testbed"
)

// usageError is bad input: one line on stderr, exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// config is what the flags ask for.
type config struct {
	opts  testbed.DelayLineOptions
	stats time.Duration // print counters this often; 0 = only at the end
}

func parseFlags(args []string, stdout io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("narrows-testbed", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // mistakes get one line; the list only on --help
	fs.Usage = func() {
		fmt.Fprintln(stdout, "Usage: narrows-testbed [flags]  (as root; Ctrl-C tears the link down)")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	rtt := fs.String("rtt", "40ms", "round-trip time: half of it each way")
	rate := fs.String("rate", "0", "line rate in bits per second, decimal: 100M, 1G, 512k (0: no limit)")
	loss := fs.String("loss", "0", "random loss each way: 0.1% (or a probability, 0.001)")
	jitter := fs.String("jitter", "0", "each packet's delay varies by up to ± this much, e.g. 1ms (order is kept)")
	reorder := fs.Bool("reorder", false, "let jitter reorder packets")
	flowRate := fs.String("flow-rate", "0", "instead of --rate, cap each connection at this rate, each in a queue of its own: a per-connection shaper, a cloud's per-flow limit (0: none)")
	queue := fs.String("queue", "", "router buffer, as time at the rate (50ms) or bytes (256K); default: max(50ms, RTT)")
	mtu := fs.Int("mtu", testbed.DefaultMTU, "MTU of both hosts' devices")
	seed := fs.Uint64("seed", 1, "seed for loss and jitter")
	stats := fs.String("stats", "0", "print the line's counters this often, e.g. 10s (0: only when stopping)")
	moderation := fs.String("moderation", "0", "the receiving host's NIC moderates interrupts: while its device's rx-frames (ethtool -C DEV rx-frames N in its namespace) is 2 or more, packets wait for N of them or this long, e.g. 200us (0: never)")
	noRT := fs.Bool("no-realtime", false, "keep the forwarder at ordinary priority (default: SCHED_FIFO 1 when allowed)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return c, usagef("unexpected argument %q: every setting is a flag, e.g. --rtt 40ms", fs.Arg(0))
	}
	o := &c.opts
	var err error
	if o.RTT, err = duration("--rtt", *rtt); err != nil {
		return c, err
	}
	if o.Jitter, err = duration("--jitter", *jitter); err != nil {
		return c, err
	}
	if o.RateBitsPerSecond, err = parseRate(*rate); err != nil {
		return c, usagef("--rate %v", err)
	}
	if o.FlowRateBitsPerSecond, err = parseRate(*flowRate); err != nil {
		return c, usagef("--flow-rate %v", err)
	}
	if o.Loss, err = parseLoss(*loss); err != nil {
		return c, usagef("--loss %v", err)
	}
	if o.Moderation, err = duration("--moderation", *moderation); err != nil {
		return c, err
	}
	if c.stats, err = duration("--stats", *stats); err != nil {
		return c, err
	}
	if *queue != "" {
		if o.RateBitsPerSecond == 0 && o.FlowRateBitsPerSecond == 0 {
			return c, usagef("--queue %s: a queue needs a --rate or a --flow-rate (without one nothing waits)", *queue)
		}
		if d, derr := time.ParseDuration(*queue); derr == nil && d > 0 {
			o.QueueDelay = d
		} else if b, serr := metric.ParseSize(*queue); serr == nil && b > 0 && o.FlowRateBitsPerSecond > 0 {
			o.FlowQueueBytes = b
		} else if serr == nil && b > 0 {
			o.QueueBytes = b
		} else {
			return c, usagef("--queue %q: give a time at the rate (50ms) or a size (256K)", *queue)
		}
	}
	o.Reorder, o.MTU, o.Seed, o.NoRealtime = *reorder, *mtu, *seed, *noRT
	if *reorder && o.Jitter == 0 {
		return c, usagef("--reorder needs --jitter: without jitter nothing can overtake")
	}
	if *seed == 0 {
		return c, usagef("--seed 0: use a seed from 1")
	}
	// Let the library check the rest (MTU, queue against MTU, ...), and
	// turn its complaint into a usage error: every field came from a flag.
	if _, err := testbed.CheckDelayLineOptions(c.opts); err != nil {
		return c, usagef("%s", strings.TrimPrefix(err.Error(), "testbed: "))
	}
	return c, nil
}

func duration(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usagef("%s %q: use a duration such as 40ms or 1.5s", name, v)
	}
	return d, nil
}

// parseRate reads a line rate in decimal bits per second by metric's one
// table: "100M", "100Mbit", "100mbit/s", "1.5G", "512k", "64000" (100M is
// 10^8 bit/s, as link speeds are and as tc reads "100mbit"), 0 for none.
func parseRate(s string) (int64, error) {
	v, err := metric.ParseBitRate(s)
	if err != nil {
		return 0, fmt.Errorf("%q: use bits per second with k, M or G (decimal), e.g. 100M", s)
	}
	if v > 0 && v < 1000 {
		return 0, fmt.Errorf("%q: below 1 kbit/s; did you mean %gM?", s, v)
	}
	if v > 100e9 {
		return 0, fmt.Errorf("%q: above 100 Gbit/s", s)
	}
	return int64(v), nil
}

// parseLoss reads "0.1%" as 0.001, or a bare probability below 1.
func parseLoss(s string) (float64, error) {
	in := strings.TrimSpace(s)
	pct := strings.HasSuffix(in, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(in, "%"), 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, fmt.Errorf("%q: use a percentage such as 0.1%%", s)
	}
	if pct {
		f /= 100
	}
	if f >= 1 {
		return 0, fmt.Errorf("%q: must be below 100%% (a bare number is a probability: 0.01 is 1%%)", s)
	}
	return f, nil
}
