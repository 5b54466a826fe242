package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/testenv"
)

// SkipUnlessAvailable skips t if namespaces cannot be made here, giving
// Available's reason; under CI=true or NARROWS_REQUIRE_NETNS=1 it fails t
// instead (testenv.Need).
func SkipUnlessAvailable(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		testenv.Need(t, testenv.NetNS, "network namespaces are unavailable: %v", err)
	}
}

// NewTestLink is NewLink for tests: it skips t with Available's reason when
// namespaces cannot be made (fails instead under CI=true or
// NARROWS_REQUIRE_NETNS=1), fails t if the link cannot be built, and
// registers Close with t.Cleanup.
func NewTestLink(t testing.TB, opts LinkOptions) *Link {
	t.Helper()
	SkipUnlessAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := NewLink(ctx, opts)
	if err != nil {
		t.Fatalf("testbed.NewLink(%+v): %v", opts, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("testbed: closing link: %v", err)
		}
	})
	t.Logf("testbed: link %s <-> %s, options %+v", l.A, l.B, l.Options)
	return l
}

// SkipUnlessDelayLine is SkipUnlessAvailable for tests that need a
// DelayLine: namespaces and TUN devices.
func SkipUnlessDelayLine(t testing.TB) {
	t.Helper()
	if err := DelayLineAvailable(); err != nil {
		testenv.Need(t, testenv.NetNS, "the delay line (namespaces and TUN devices) is unavailable: %v", err)
	}
}

// NewTestDelayLine is NewDelayLine for tests, as NewTestLink is for
// NewLink. At cleanup it also fails t if the line hit an I/O error.
func NewTestDelayLine(t testing.TB, opts DelayLineOptions) *DelayLine {
	t.Helper()
	SkipUnlessDelayLine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := NewDelayLine(ctx, opts)
	if err != nil {
		t.Fatalf("testbed.NewDelayLine: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Err(); err != nil {
			t.Errorf("testbed: delay line: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("testbed: closing delay line: %v", err)
		}
	})
	t.Logf("testbed: delay line %s <-> %s; A→B %s; B→A %s", l.A, l.B, l.Options.AtoB, l.Options.BtoA)
	return l
}

// Slots is how many shares of the machine timing-sensitive testbed tests
// divide among themselves (Share). A test that waits on a delay line
// (most of the experiments: a shaped line, a database's round trips;
// 5-25% of the two cores busy, by vmstat over their run) takes one; one
// that moves data as fast as the machine can (an unshaped transfer, a
// disk measured on tmpfs: 80-90%) takes them all and runs alone.
const Slots = 4

// NewTestSwitch is NewSwitch for tests, as NewTestLink is for NewLink.
func NewTestSwitch(t testing.TB, opts SwitchOptions) *Switch {
	t.Helper()
	SkipUnlessAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := NewSwitch(ctx, opts)
	if err != nil {
		t.Fatalf("testbed.NewSwitch(%+v): %v", opts, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("testbed: closing switch: %v", err)
		}
	})
	t.Logf("testbed: switch %s, hosts %v, options %+v", s.Bridge, s.Hosts, s.Options)
	return s
}
