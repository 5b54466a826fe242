package sysinfo

import (
	"runtime"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// CoreTime is one CPU's time since boot as its system splits it. Idle
// holds the time waiting on I/O too; User holds nice and guest time.
type CoreTime struct {
	User, System, Idle, IRQ, SoftIRQ, Steal time.Duration
}

func (c CoreTime) total() time.Duration {
	return c.User + c.System + c.Idle + c.IRQ + c.SoftIRQ + c.Steal
}

// CoreTimes reads every CPU's times: Linux's /proc/stat, Windows'
// processor performance information; an error elsewhere.
func CoreTimes() ([]CoreTime, error) { return coreTimes() }

// CoreLoadSince reads the cores now and returns what reads them again
// and says how they spent the time between: nil where they cannot be
// read (or a CPU came or went meanwhile).
func CoreLoadSince() func() *result.CoreLoad {
	before, err := CoreTimes()
	return func() *result.CoreLoad {
		if err != nil {
			return nil
		}
		after, err := CoreTimes()
		if err != nil {
			return nil
		}
		return CoreLoadBetween(before, after, runtime.GOOS)
	}
}

// CoreLoadBetween is the busiest core between two readings, split, and
// the other cores' mean busy share; nil when the readings do not match
// or no time passed.
func CoreLoadBetween(before, after []CoreTime, goos string) *result.CoreLoad {
	if len(before) == 0 || len(before) != len(after) {
		return nil
	}
	type share struct {
		d     CoreTime
		total float64
		busy  float64
	}
	shares := make([]share, len(after))
	best := -1
	for i := range after {
		a, b := after[i], before[i]
		d := CoreTime{User: a.User - b.User, System: a.System - b.System, Idle: a.Idle - b.Idle,
			IRQ: a.IRQ - b.IRQ, SoftIRQ: a.SoftIRQ - b.SoftIRQ, Steal: a.Steal - b.Steal}
		if d.User < 0 || d.System < 0 || d.Idle < 0 || d.IRQ < 0 || d.SoftIRQ < 0 || d.Steal < 0 {
			return nil // a counter went back: not the same CPU
		}
		t := float64(d.total())
		if t <= 0 {
			continue // an offline CPU counts nothing
		}
		shares[i] = share{d: d, total: t, busy: 1 - float64(d.Idle)/t}
		if best < 0 || shares[i].busy > shares[best].busy {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	s := shares[best]
	l := &result.CoreLoad{OS: goos, Cores: len(after), Core: best, Busy: s.busy,
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
