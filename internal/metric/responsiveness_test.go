package metric

import (
	"math"
	"testing"
	"time"
)

func TestTrimmedMean(t *testing.T) {
	h := NewHistogram()
	// 95 values of 1 ms and 5 of 1 s: the slowest 5% go.
	for range 95 {
		h.Record(time.Millisecond)
	}
	for range 5 {
		h.Record(time.Second)
	}
	if got := h.TrimmedMean(TrimKeep); math.Abs(float64(got-time.Millisecond)) > 0.001*float64(time.Millisecond) {
		t.Errorf("trimmed mean %v, want 1ms within 0.1%%", got)
	}
	if got, want := h.TrimmedMean(1), h.Mean(); got != want {
		t.Errorf("keep 1: %v, want the exact mean %v", got, want)
	}
	// A cut inside a bucket takes only part of it.
	h.Reset()
	for i := range 100 {
		h.Record(time.Duration(i+1) * time.Millisecond)
	}
	want := 48 * time.Millisecond // the mean of 1..95 ms
	if got := h.TrimmedMean(TrimKeep); math.Abs(float64(got-want)) > 0.002*float64(want) {
		t.Errorf("1..100 ms: trimmed mean %v, want %v", got, want)
	}
	if NewHistogram().TrimmedMean(TrimKeep) != 0 {
		t.Error("an empty histogram's trimmed mean must be 0")
	}
}

func TestResponsiveness(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name                      string
		handshake, separate, self time.Duration
		want                      float64
	}{
		// 60,000 ms / 50 ms = 1,200 foreign; 60,000 / 100 = 600 loaded.
		{"all three", 40 * ms, 60 * ms, 100 * ms, 900},
		{"no handshake", 0, 50 * ms, 100 * ms, 900},
		{"no self probe", 40 * ms, 60 * ms, 0, 1200},
		{"self alone", 0, 0, 100 * ms, 600},
		{"nothing", 0, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Responsiveness(c.handshake, c.separate, c.self); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("got %v RPM, want %v", got, c.want)
			}
		})
	}
}
