//go:build linux

package testbed

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestModerationBatches holds the forwarder's moderation to the model on
// packets whose departures are all past (as after a loop that woke late):
// each is delivered in the batch a NIC with rx-frames 4 and a 200 µs timer
// would have made, in order, its wait counted from when it was due. No
// namespaces: the far device is a datagram socket pair.
func TestModerationBatches(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	const mod = 200 * time.Microsecond
	us := time.Microsecond
	f, err := newForwarder("test", -1, fds[0], newShaper(Path{}, 1, 1), time.Now().Add(-time.Second), 1500, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f.efd)
	f.mod, f.rx = mod, &rxCoalescing{}
	f.rx.frames.Store(4)
	deps := []time.Duration{
		0, 100 * us, // alone: the timer lets both go at 200 µs
		1000 * us,                                  // alone again, due after that timer ran out: its own, at 1200 µs
		2000 * us, 2001 * us, 2002 * us, 2003 * us, // four: the count lets them go at 2003 µs
		2004 * us, // the next ring's first: the timer, at 2204 µs
	}
	for i, d := range deps {
		f.seq++
		f.q.Push(heldPacket{dep: d, seq: f.seq, buf: []byte{byte(i)}})
	}
	f.sendDue()
	if f.held() != 0 {
		t.Fatalf("%d packets still held, all past due", f.held())
	}
	buf := make([]byte, 8)
	for i := range deps {
		n, _, err := unix.Recvfrom(fds[1], buf, unix.MSG_DONTWAIT)
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("delivery %d: %d bytes, %v, packet %d; want packet %d", i, n, err, buf[0], i)
		}
	}
	st := f.st
	wantWait := (200 + 100 + 200 + 3 + 2 + 1 + 200) * us
	if st.Packets != int64(len(deps)) || st.ModerationHeld != 7 || st.ModerationTimeouts != 4 || st.ModerationWait != wantWait {
		t.Errorf("%d delivered, %d held by moderation (%d by the timer) %v in all; want %d, 7 (4), %v",
			st.Packets, st.ModerationHeld, st.ModerationTimeouts, st.ModerationWait, len(deps), wantWait)
	}

	// rx-frames 1: nothing waits.
	f.st = PathStats{}
	f.rx.frames.Store(1)
	f.seq++
	f.q.Push(heldPacket{dep: 3000 * us, seq: f.seq, buf: []byte{9}})
	f.sendDue()
	if f.st.Packets != 1 || f.st.ModerationHeld != 0 {
		t.Errorf("at rx-frames 1: %d delivered, %d held by moderation; want 1, 0", f.st.Packets, f.st.ModerationHeld)
	}
}
