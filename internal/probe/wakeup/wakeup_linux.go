//go:build linux

package wakeup

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/netio"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// holdWay is how this process keeps CPUs awake: a CPU latency request
// of 0 (sysinfo.HoldCPULatency) where a cpuidle driver reads it and this
// process may write it, else idle-priority spinning threads (what the
// kernel's idle=poll would do, and the way that needs no privilege).
var holdWay = sync.OnceValues(func() (string, error) {
	if sysinfo.CPUIdleGoverned() {
		if release, err := sysinfo.HoldCPULatency(); err == nil {
			release()
			return result.HowLatencyRequest, nil
		}
	}
	if set, err := cpus(); err != nil || len(set) < 2 {
		return "", errors.Join(err, errOneCPU)
	}
	return result.HowSpinners, nil
})

func canHold() (string, error) { return holdWay() }

// hold keeps every CPU awake until release.
func hold() (release func(), err error) {
	how, err := holdWay()
	if err != nil {
		return nil, err
	}
	if how == result.HowLatencyRequest {
		return sysinfo.HoldCPULatency()
	}
	set, err := cpus()
	if err != nil {
		return nil, err
	}
	return spin(set, idleOn)
}

// idleOn pins the calling thread to cpu at SCHED_IDLE, for spin.
func idleOn(cpu int) error {
	if err := pin(cpu); err != nil {
		return err
	}
	return unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0)
}

// cpus are the CPUs this process may run on.
func cpus() ([]int, error) {
	var s unix.CPUSet
	if err := unix.SchedGetaffinity(0, &s); err != nil {
		return nil, fmt.Errorf("the process's CPUs: %w", err)
	}
	var out []int
	for c := 0; c < 1024 && len(out) < s.Count(); c++ {
		if s.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func pin(cpu int) error {
	var s unix.CPUSet
	s.Set(cpu)
	return unix.SchedSetaffinity(0, &s)
}

// loopback is a TCP connection over 127.0.0.1, both ends netio's
// blocking connections: raw calls that keep their P, as netio's loops
// and db ping's sessions make them. With Go's ordinary calls the
// runtime's monitor and its spare threads woke to take the P back at
// every wait, and the blocks as is measured 13 to 76 µs a round trip by
// turns, where the same threads' calls made raw measured 50-53.
func loopback() (client, echo end, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("loopback: %w", err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return nil, nil, fmt.Errorf("loopback: %w", err)
	}
	e, err := l.Accept()
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("loopback: %w", err)
	}
	var bc, be net.Conn
	if bc, err = netio.Blocking(c); err == nil {
		be, err = netio.Blocking(e)
	}
	if err != nil {
		c.Close()
		e.Close()
		return nil, nil, fmt.Errorf("loopback: %w", err)
	}
	return connEnd{bc}, connEnd{be}, nil
}

// connEnd is a blocking net.Conn as an end.
type connEnd struct{ net.Conn }

func (c connEnd) recv(b []byte) (int, bool, error) {
	c.SetReadDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck // netio's deadlines cannot fail
	n, err := c.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, true, nil
	}
	if err == io.EOF {
		return 0, false, nil
	}
	return n, false, err
}

func (c connEnd) sendAll(b []byte) error {
	_, err := c.Write(b)
	return err
}

func (c connEnd) close() { c.Conn.Close() }

// queriesHere: a database's queries are timed here (netio's blocking
// socket).
func queriesHere() error { return nil }
