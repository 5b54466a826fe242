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
