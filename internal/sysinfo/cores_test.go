package sysinfo

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestCoreTimes reads the machine's cores, keeps one busy for a while on
// this thread, and reads them again: the busiest core was busy, and its
// parts add up to its busy share.
func TestCoreTimes(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "windows" {
		if _, err := coreTimes(); err == nil {
			t.Fatal("per-core times read on", runtime.GOOS)
		}
		return
	}
	first, err := coreTimes()
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 1 || len(first) != runtime.NumCPU() && runtime.GOOS == "linux" && !affinityLimited() {
		t.Fatalf("%d cores read, %d CPUs in the machine", len(first), runtime.NumCPU())
	}
	load := CoreLoadSince("")
	runtime.LockOSThread()
	spunFrom, terr := ThreadCPUTime()
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	spunTo, terr2 := ThreadCPUTime()
	runtime.UnlockOSThread()
	after, err := coreTimes()
	if err != nil || len(after) != len(first) {
		t.Fatalf("%d cores read after %d: %v", len(after), len(first), err)
	}
	l := load()
	if l == nil {
		t.Fatal("no load between two readings")
	}
	t.Logf("%+v", *l)
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	// A thread spun 300 ms on one core at a time: some core was busy
	// for most of it (the scheduler may move it once or twice; on a
	// loaded machine another core may be busier still).
	if l.Busy < 0.5 {
		t.Errorf("the busiest core was busy %.2f of 300 ms while this thread spun", l.Busy)
	}
	// The thread's CPU was user time, whichever cores ran it: the cores'
	// user time between the readings holds it. Not the busiest core's
	// user share: on a loaded machine (CI's phase 1, both cores full) the
	// core named may be another process's, in system time.
	if terr != nil || terr2 != nil {
		t.Fatalf("the thread's CPU time: %v, %v", terr, terr2)
	}
	spun := spunTo - spunFrom
	var user time.Duration
	for i := range after {
		user += since(after[i].User, first[i].User)
	}
	t.Logf("this thread ran %v; the cores' user time %v", spun, user)
	// Windows' counters advance by the scheduler's tick (15.6 ms): the
	// thread's time is held to half, less a tick.
	if spun >= 100*time.Millisecond && user < spun/2-16*time.Millisecond {
		t.Errorf("the cores spent %v in user time while this thread spun %v in user code", user, spun)
	}
}

// affinityLimited: this process may not run on every CPU (a cpuset), so
// NumCPU counts fewer than the system lists.
func affinityLimited() bool {
	c, _ := coreTimes()
	return runtime.NumCPU() < len(c)
}

func TestCoreLoadBetween(t *testing.T) {
	ms := time.Millisecond
	before := []coreTime{{ID: 0, User: 100 * ms, Idle: 900 * ms}, {ID: 1, User: 10 * ms, Idle: 10 * ms}}
	after := []coreTime{
		{ID: 0, User: 150 * ms, Idle: 1850 * ms}, // 1 s: 5% busy
		{ID: 1, User: 110 * ms, System: 250 * ms, SoftIRQ: 590 * ms, IRQ: 40 * ms, Idle: 20 * ms, Steal: 10 * ms}, // 1 s: 99% busy
	}
	l := coreLoadBetween(before, after, "linux")
	if l == nil {
		t.Fatal("nil")
	}
	want := func(name string, got, w float64) {
		if d := got - w; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s %.4f, want %.4f", name, got, w)
		}
	}
	if l.Core != 1 || l.Cores != 2 {
		t.Errorf("core %d of %d, want 1 of 2", l.Core, l.Cores)
	}
	want("busy", l.Busy, 0.99)
	want("user", l.User, 0.1)
	want("system", l.System, 0.25)
	want("softirq", l.SoftIRQ, 0.59)
	want("irq", l.IRQ, 0.04)
	want("steal", l.Steal, 0.01)
	want("others", l.OthersBusy, 0.05)
	if err := l.Check(); err != nil {
		t.Error(err)
	}
	// Two full cores, one of a busy process and one of packets: the
	// packets' is named, whichever is listed first (a loaded machine's
	// loopback stream read the busy process's core at one end and the
	// stream's at the other).
	for _, first := range []int{0, 1} {
		full := []coreTime{
			{ID: 0, User: 1000 * ms, Idle: 1000 * ms},
			{ID: 1, User: 100 * ms, System: 300 * ms, SoftIRQ: 590 * ms, Idle: 1010 * ms},
		}
		if first == 1 {
			full[0], full[1] = full[1], full[0]
		}
		b := []coreTime{{ID: full[0].ID, Idle: 1000 * ms}, {ID: full[1].ID, Idle: 1000 * ms}}
		if l := coreLoadBetween(b, full, "linux"); l == nil || l.Core != 1 || l.Packet() < 0.5 {
			t.Errorf("two full cores, the packets' on core 1, listed %d first: %+v", first, l)
		}
	}
	if coreLoadBetween(before, after[:1], "linux") != nil {
		t.Error("a CPU came or went, and a load was still given")
	}
	// A counter that went back a little (Linux's iowait may) counts
	// nothing, and the rest still tell.
	back := slices.Clone(after)
	back[1].Idle = before[1].Idle - ms
	if l := coreLoadBetween(before, back, "linux"); l == nil || l.Core != 1 || l.Busy != 1 {
		t.Errorf("idle went back 1 ms on core 1: %+v", l)
	}
}
