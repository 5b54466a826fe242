package sysinfo

import (
	"math"
	"runtime"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// coreTime is one CPU's time since boot as its system splits it. Idle
// holds the time waiting on I/O too; User holds nice and guest time. ID
// is the CPU's number (Linux lists only the CPUs online: cpu0, cpu2).
type coreTime struct {
	ID                                      int
	User, System, Idle, IRQ, SoftIRQ, Steal time.Duration
}

func (c coreTime) total() time.Duration {
	return c.User + c.System + c.Idle + c.IRQ + c.SoftIRQ + c.Steal
}

// CoreLoadSince reads the cores now and returns what reads them again
// and says how they spent the time between: nil where they cannot be
// read (or a CPU came or went meanwhile). dev is the interface the run's
// traffic crosses (InterfaceName): the interrupts of its queues that the
// busiest core took are named (Linux; none for a virtual interface).
func CoreLoadSince(dev string) func() *result.CoreLoad {
	before, err := coreTimes()
	irqs := nicInterrupts(dev)
	start := time.Now()
	return func() *result.CoreLoad {
		if err != nil {
			return nil
		}
		after, err := coreTimes()
		if err != nil {
			return nil
		}
		l := coreLoadBetween(before, after, runtime.GOOS)
		if l != nil {
			l.NIC = dev // an interface's name: 15 bytes at most on Linux
			l.NICInterrupts = irqs(l.Core, time.Since(start).Seconds())
			l.NUMA = coreNUMA(l.Core, dev)
			l.MHz = coreMHz(l.Core)
		}
		return l
	}
}

// coreLoadBetween is the busiest core between two readings, split, and
// the other cores' mean busy share; nil when the readings do not match
// (a CPU came or went) or no time passed. A counter that went back a
// little (Linux's iowait may) counts nothing.
func coreLoadBetween(before, after []coreTime, goos string) *result.CoreLoad {
	if len(before) == 0 || len(before) != len(after) {
		return nil
	}
	type share struct {
		d     coreTime
		total float64
		busy  float64
	}
	shares := make([]share, len(after))
	best := -1
	for i := range after {
		a, b := after[i], before[i]
		if a.ID != b.ID {
			return nil
		}
		d := coreTime{ID: a.ID, User: since(a.User, b.User), System: since(a.System, b.System), Idle: since(a.Idle, b.Idle),
			IRQ: since(a.IRQ, b.IRQ), SoftIRQ: since(a.SoftIRQ, b.SoftIRQ), Steal: since(a.Steal, b.Steal)}
		t := float64(d.total())
		if t <= 0 {
			continue // nothing counted
		}
		shares[i] = share{d: d, total: t, busy: 1 - float64(d.Idle)/t}
		if best < 0 || busier(shares[i].d, shares[i].busy, shares[best].d, shares[best].busy) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	s := shares[best]
	l := &result.CoreLoad{OS: goos, Cores: len(after), Core: s.d.ID, Busy: s.busy,
		User: float64(s.d.User) / s.total, System: float64(s.d.System) / s.total,
		IRQ: float64(s.d.IRQ) / s.total, SoftIRQ: float64(s.d.SoftIRQ) / s.total, Steal: float64(s.d.Steal) / s.total}
	n := 0
	for i, o := range shares {
		if i != best && o.total > 0 {
			l.OthersBusy += o.busy
			n++
		}
	}
	if n > 0 {
		l.OthersBusy /= float64(n)
	}
	return l
}

// sameBusy: two cores' busy shares this close are one reading (a tick
// of 10 ms in a second's /proc/stat is 1%).
const sameBusy = 0.02

// busier: core a (busy share ab) is the one to name over b: busier, or
// as busy with more of it packet work (two full cores, one of a busy
// process and one of a stream's softirq, name the stream's).
func busier(a coreTime, ab float64, b coreTime, bb float64) bool {
	if math.Abs(ab-bb) > sameBusy {
		return ab > bb
	}
	return a.IRQ+a.SoftIRQ > b.IRQ+b.SoftIRQ
}

// since is a counter's growth from y to x, nothing where it went back.
func since(x, y time.Duration) time.Duration { return max(x-y, 0) }

// OthersSince reads this machine's CPU time now and returns what reads it
// again and says what share of all its CPUs' time between the two went
// to work other than this process: their user, system, interrupt and
// softirq time less this process's own CPU time, over the CPUs' total.
// ok is false where the times cannot be read (or a CPU came or went).
// The kernel's work for this process that it books to no process (the
// softirqs that carry its packets, on Linux) counts as others'.
func OthersSince(also ...int) func() (share float64, ok bool) {
	// own is this process's CPU time and that of the processes also
	// names (a database server's, on this host, answering the
	// experiment's queries): the experiment's work, not other work.
	own := func() (time.Duration, error) {
		t, err := CPUTime()
		for _, pid := range also {
			if p, perr := ProcessCPU(pid); perr == nil {
				t += p
			}
		}
		return t, err
	}
	before, err := coreTimes()
	own1, oerr := own()
	return func() (float64, bool) {
		if err != nil || oerr != nil {
			return 0, false
		}
		after, err := coreTimes()
		own2, oerr := own()
		if err != nil || oerr != nil || len(after) != len(before) {
			return 0, false
		}
		var busy, total time.Duration
		for i := range after {
			if after[i].ID != before[i].ID {
				return 0, false
			}
			d := coreTime{User: after[i].User - before[i].User, System: after[i].System - before[i].System,
				Idle: after[i].Idle - before[i].Idle, IRQ: after[i].IRQ - before[i].IRQ,
				SoftIRQ: after[i].SoftIRQ - before[i].SoftIRQ, Steal: after[i].Steal - before[i].Steal}
			busy += d.User + d.System + d.IRQ + d.SoftIRQ
			total += d.total()
		}
		if total <= 0 {
			return 0, false
		}
		return max(0, float64(busy-(own2-own1))/float64(total)), true
	}
}
