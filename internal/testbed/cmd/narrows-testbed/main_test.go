package main

import (
	"bytes"
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/testbed"
)

func TestParseFlags(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, c config)
		wantErr string // a usage error containing this
	}{
		{"defaults", nil, func(t *testing.T, c config) {
			if c.opts.RTT != 40*ms || c.opts.RateBitsPerSecond != 0 || c.opts.Loss != 0 {
				t.Errorf("got %+v", c.opts)
			}
		}, ""},
		{"the README's line", []string{"--rtt", "40ms", "--rate", "100M", "--loss", "0.1%", "--jitter", "1ms"}, func(t *testing.T, c config) {
			o := c.opts
			if o.RTT != 40*ms || o.RateBitsPerSecond != 100_000_000 || o.Loss != 0.001 || o.Jitter != ms {
				t.Errorf("got %+v", o)
			}
		}, ""},
		{"queue as time", []string{"--rate", "10M", "--queue", "20ms"}, func(t *testing.T, c config) {
			if c.opts.QueueDelay != 20*ms || c.opts.QueueBytes != 0 {
				t.Errorf("got %+v", c.opts)
			}
		}, ""},
		{"queue as bytes", []string{"--rate", "10M", "--queue", "256K"}, func(t *testing.T, c config) {
			if c.opts.QueueBytes != 256<<10 {
				t.Errorf("got %+v", c.opts)
			}
		}, ""},
		{"per-flow rate, its queue as bytes", []string{"--flow-rate", "20M", "--queue", "128K"}, func(t *testing.T, c config) {
			if o := c.opts; o.FlowRateBitsPerSecond != 20_000_000 || o.FlowQueueBytes != 128<<10 || o.QueueBytes != 0 || o.RateBitsPerSecond != 0 {
				t.Errorf("got %+v", o)
			}
		}, ""},
		{"moderation", []string{"--moderation", "200us"}, func(t *testing.T, c config) {
			if c.opts.Moderation != 200*time.Microsecond {
				t.Errorf("got %+v", c.opts)
			}
		}, ""},
		{"bare probability", []string{"--loss", "0.02"}, func(t *testing.T, c config) {
			if c.opts.Loss != 0.02 {
				t.Errorf("got %v", c.opts.Loss)
			}
		}, ""},
		{"unknown flag", []string{"--latency", "5ms"}, nil, "flag provided but not defined: -latency"},
		{"stray argument", []string{"40ms"}, nil, `unexpected argument "40ms"`},
		{"rate in bytes", []string{"--rate", "100MB"}, nil, `--rate "100MB"`},
		{"rate without a unit", []string{"--rate", "100"}, nil, "did you mean 100M"},
		{"loss of 100%", []string{"--loss", "100%"}, nil, "below 100%"},
		{"loss of 1", []string{"--loss", "1"}, nil, "below 100%"},
		{"bad rtt", []string{"--rtt", "forty"}, nil, `--rtt "forty"`},
		{"queue without rate", []string{"--queue", "50ms"}, nil, "needs a --rate"},
		{"per-flow rate with a line rate", []string{"--rate", "100M", "--flow-rate", "20M"}, nil, "not modelled"},
		{"reorder without jitter", []string{"--reorder"}, nil, "needs --jitter"},
		{"tiny MTU", []string{"--mtu", "100"}, nil, "MTU"},
		{"moderation of minutes", []string{"--moderation", "2m"}, nil, "moderation"},
		{"queue below a packet", []string{"--rate", "1M", "--queue", "1K"}, nil, "cannot hold one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args, &bytes.Buffer{})
			if tc.wantErr != "" {
				ue, ok := err.(*usageError)
				if !ok || !strings.Contains(ue.msg, tc.wantErr) {
					t.Fatalf("err = %v, want a usage error containing %q", err, tc.wantErr)
				}
				if strings.Contains(ue.msg, "\n") {
					t.Errorf("usage error spans lines: %q", ue.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"100M", 100_000_000}, {"100mbit", 100_000_000}, {"100Mbit/s", 100_000_000},
		{"1.5G", 1_500_000_000}, {"512k", 512_000}, {"64000", 64_000}, {"10Mbps", 10_000_000},
	}
	for _, tc := range tests {
		if got, err := parseRate(tc.in); err != nil || got != tc.want {
			t.Errorf("parseRate(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestBadFlagsExit2(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--rate", "fast"}, &out, &errb, nil)
	if code != 2 || strings.Count(errb.String(), "\n") != 1 || !strings.HasPrefix(errb.String(), "narrows-testbed: --rate") {
		t.Errorf("exit %d, stderr %q; want 2 and one line about --rate", code, errb.String())
	}
}

// TestRunAndStop runs the whole command in-process: it must print the
// hosts and how to use them, carry packets, and remove everything when
// its context ends (as on Ctrl-C).
func TestRunAndStop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the delay line is Linux-only")
	}
	testbed.SkipUnlessDelayLine(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	var line *testbed.DelayLine
	var connect string
	code := run(ctx, []string{"--rtt", "10ms", "--rate", "20M"}, &out, &errb, func(l *testbed.DelayLine) {
		line = l
		// A TCP handshake across the line, by an outside program: bash's
		// /dev/tcp to a port nobody listens on must be refused by B's
		// kernel, which proves the round trip (across a dead line the
		// connect would time out instead).
		b, _ := exec.Command("ip", "netns", "exec", l.A.NS, "timeout", "10", "bash", "-c",
			"exec 3<>/dev/tcp/"+l.B.Addr.String()+"/9").CombinedOutput()
		connect = string(b)
		cancel()
	})
	t.Logf("stdout:\n%s", out.String())
	if code != 0 || errb.Len() > 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if !strings.Contains(connect, "Connection refused") {
		t.Errorf("connecting across the line to a closed port on B: %q, want it refused by B", connect)
	}
	for _, want := range []string{line.A.NS, line.B.NS, line.B.Addr.String(), "ip netns exec " + line.A.NS, "delay 5ms, 20 Mbit/s", "removed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if s := line.Stats(); s.AtoB.Packets == 0 || s.BtoA.Packets == 0 {
		t.Errorf("the line carried nothing: %+v", s)
	}
	list, _ := exec.Command("ip", "netns", "list").Output()
	for _, h := range line.Hosts() {
		if strings.Contains(string(list), h.NS) {
			t.Errorf("%s still exists after the command ended", h.NS)
		}
	}
}

// TestParseRateTooSlow: a rate under 1 kbit/s names the megabits it
// probably meant, whatever unit it was written with.
func TestParseRateTooSlow(t *testing.T) {
	for _, in := range []string{"500", "500bit", "500bit/s", "500bps"} {
		if _, err := parseRate(in); err == nil || !strings.Contains(err.Error(), "did you mean 500M?") {
			t.Errorf("parseRate(%q): %v, want it to suggest 500M", in, err)
		}
	}
}
