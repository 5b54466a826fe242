package testbed

import (
	"testing"
	"time"
)

func TestLinkOptionsDefaults(t *testing.T) {
	tests := []struct {
		name    string
		in      LinkOptions
		want    LinkOptions
		wantErr bool
	}{
		{"zero is unshaped", LinkOptions{}, LinkOptions{MTU: 1500}, false},
		{"200Mbit", LinkOptions{RateBitsPerSecond: 200_000_000},
			LinkOptions{RateBitsPerSecond: 200_000_000, BurstBytes: 100_000, QueueLatency: 50 * time.Millisecond, MTU: 1500}, false},
		{"slow rate gets 32KiB floor", LinkOptions{RateBitsPerSecond: 1_000_000},
			LinkOptions{RateBitsPerSecond: 1_000_000, BurstBytes: 32 << 10, QueueLatency: 50 * time.Millisecond, MTU: 1500}, false},
		{"jumbo MTU raises the floor", LinkOptions{RateBitsPerSecond: 1_000_000, MTU: 65000},
			LinkOptions{RateBitsPerSecond: 1_000_000, BurstBytes: 65014, QueueLatency: 50 * time.Millisecond, MTU: 65000}, false},
		{"explicit values kept", LinkOptions{RateBitsPerSecond: 5e6, BurstBytes: 9000, QueueLatency: time.Second, MTU: 1400},
			LinkOptions{RateBitsPerSecond: 5e6, BurstBytes: 9000, QueueLatency: time.Second, MTU: 1400}, false},
		{"burst below one frame", LinkOptions{RateBitsPerSecond: 5e6, BurstBytes: 1000}, LinkOptions{}, true},
		{"negative rate", LinkOptions{RateBitsPerSecond: -1}, LinkOptions{}, true},
		{"tiny MTU", LinkOptions{MTU: 100}, LinkOptions{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.withDefaults()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDelayLineOptionsDefaults(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name           string
		in             DelayLineOptions
		wantAB, wantBA Path
		wantErr        bool
	}{
		{"zero: a plain wire", DelayLineOptions{}, Path{}, Path{}, false},
		{"RTT split, odd ns to A→B", DelayLineOptions{RTT: 40*ms + 1}, Path{Delay: 20*ms + 1}, Path{Delay: 20 * ms}, false},
		{"rate gets a 50ms queue at least", DelayLineOptions{RTT: 40 * ms, RateBitsPerSecond: 100_000_000},
			Path{Delay: 20 * ms, RateBitsPerSecond: 1e8, QueueBytes: 625_000, QueueDelay: 50 * ms},
			Path{Delay: 20 * ms, RateBitsPerSecond: 1e8, QueueBytes: 625_000, QueueDelay: 50 * ms}, false},
		{"long path: a round trip's worth of queue", DelayLineOptions{RTT: 200 * ms, RateBitsPerSecond: 10_000_000},
			Path{Delay: 100 * ms, RateBitsPerSecond: 1e7, QueueBytes: 250_000, QueueDelay: 200 * ms},
			Path{Delay: 100 * ms, RateBitsPerSecond: 1e7, QueueBytes: 250_000, QueueDelay: 200 * ms}, false},
		{"queue as time", DelayLineOptions{RateBitsPerSecond: 8_000_000, QueueDelay: 10 * ms},
			Path{RateBitsPerSecond: 8e6, QueueBytes: 10_000, QueueDelay: 10 * ms},
			Path{RateBitsPerSecond: 8e6, QueueBytes: 10_000, QueueDelay: 10 * ms}, false},
		{"tiny queue rounds up to one packet", DelayLineOptions{RateBitsPerSecond: 1_000_000, QueueDelay: ms},
			Path{RateBitsPerSecond: 1e6, QueueBytes: 1500, QueueDelay: ms},
			Path{RateBitsPerSecond: 1e6, QueueBytes: 1500, QueueDelay: ms}, false},
		{"per direction", DelayLineOptions{RTT: 10 * ms, Loss: 0.5, AtoB: &Path{Delay: 3 * ms}},
			Path{Delay: 3 * ms}, Path{Delay: 5 * ms, Loss: 0.5}, false},
		{"per-flow rate gets a queue per flow", DelayLineOptions{RTT: 10 * ms, FlowRateBitsPerSecond: 20_000_000},
			Path{Delay: 5 * ms, FlowRateBitsPerSecond: 2e7, FlowQueueBytes: 125_000, QueueDelay: 50 * ms},
			Path{Delay: 5 * ms, FlowRateBitsPerSecond: 2e7, FlowQueueBytes: 125_000, QueueDelay: 50 * ms}, false},
		{"per-flow rate with a line rate", DelayLineOptions{RateBitsPerSecond: 1e8, FlowRateBitsPerSecond: 2e7}, Path{}, Path{}, true},
		{"flow queue without a per-flow rate", DelayLineOptions{FlowQueueBytes: 1 << 20}, Path{}, Path{}, true},
		{"moderation both ways", DelayLineOptions{RTT: 2 * ms, Moderation: ms / 5},
			Path{Delay: ms, Moderation: ms / 5}, Path{Delay: ms, Moderation: ms / 5}, false},
		{"negative moderation", DelayLineOptions{Moderation: -1}, Path{}, Path{}, true},
		{"moderation over a second", DelayLineOptions{Moderation: 2 * time.Second}, Path{}, Path{}, true},
		{"loss of 1", DelayLineOptions{Loss: 1}, Path{}, Path{}, true},
		{"negative loss", DelayLineOptions{Loss: -0.1}, Path{}, Path{}, true},
		{"queue without a rate", DelayLineOptions{QueueBytes: 1 << 20}, Path{}, Path{}, true},
		{"queue below one packet", DelayLineOptions{RateBitsPerSecond: 1e6, QueueBytes: 1000}, Path{}, Path{}, true},
		{"negative RTT", DelayLineOptions{RTT: -ms}, Path{}, Path{}, true},
		{"negative jitter one way", DelayLineOptions{BtoA: &Path{Jitter: -1}}, Path{}, Path{}, true},
		{"MTU too small", DelayLineOptions{MTU: 500}, Path{}, Path{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.withDefaults()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if *got.AtoB != tc.wantAB || *got.BtoA != tc.wantBA {
				t.Errorf("A→B %+v, B→A %+v; want %+v and %+v", *got.AtoB, *got.BtoA, tc.wantAB, tc.wantBA)
			}
			if got.MTU != 1500 || got.Seed != 1 || got.MaxHeld != DefaultMaxHeld {
				t.Errorf("MTU %d, seed %d, MaxHeld %d; want 1500, 1, %d", got.MTU, got.Seed, got.MaxHeld, DefaultMaxHeld)
			}
		})
	}
}
