//go:build linux

package experiments

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/testbed"
)

// ssConn is one TCP connection as `ss -tinm` shows it: the kernel's own
// view, read from outside narrows.
type ssConn struct {
	BytesAcked, BytesReceived int64
	SndWnd                    int64 // the peer's advertised window (tcpi_snd_wnd)
	RcvBuf                    int64 // sk_rcvbuf (skmem rb)
	SndBuf                    int64 // sk_sndbuf (skmem tb)
	RcvSsthresh               int64 // the most window this end will offer
	CC                        string
}

var (
	ssField = regexp.MustCompile(`\b(bytes_acked|bytes_received|snd_wnd|rcv_ssthresh):(\d+)`)
	ssSkmem = regexp.MustCompile(`skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)`)
	ssCC    = regexp.MustCompile(`\s(reno|cubic|bbr|bbr2|dctcp|vegas|westwood|htcp)\s`)
)

// ssConns lists the established TCP connections in h's namespace that
// have port on either end.
func ssConns(ctx context.Context, h *testbed.Host, port int) ([]ssConn, error) {
	p := strconv.Itoa(port)
	out, err := h.Command(ctx, "ss", "-tinmH", "state", "established", "( sport = :"+p+" or dport = :"+p+" )").Output()
	if err != nil {
		return nil, err
	}
	// A connection is a line at the margin followed by indented ones.
	var recs []string
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' || len(recs) == 0 {
			recs = append(recs, line)
		} else {
			recs[len(recs)-1] += " " + line
		}
	}
	var conns []ssConn
	for _, r := range recs {
		var c ssConn
		for _, m := range ssField.FindAllStringSubmatch(r, -1) {
			v, _ := strconv.ParseInt(m[2], 10, 64)
			switch m[1] {
			case "bytes_acked":
				c.BytesAcked = v
			case "bytes_received":
				c.BytesReceived = v
			case "snd_wnd":
				c.SndWnd = v
			case "rcv_ssthresh":
				c.RcvSsthresh = v
			}
		}
		if m := ssSkmem.FindStringSubmatch(r); m != nil {
			c.RcvBuf, _ = strconv.ParseInt(m[1], 10, 64)
			c.SndBuf, _ = strconv.ParseInt(m[2], 10, 64)
		}
		if m := ssCC.FindStringSubmatch(r); m != nil {
			c.CC = m[1]
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// windowWatch samples, while a one-stream test runs, the data connection
// seen from both ends (the one that moved the most bytes): the largest
// window the receiver advertised, as the sender saw it, and the buffers.
type windowWatch struct {
	mu        sync.Mutex
	maxSndWnd int64
	sender    ssConn // last sample of the data connection at the sender
	receiver  ssConn // and at the receiver
	samples   int
}

func watchWindow(ctx context.Context, t *testing.T, sender, receiver *testbed.Host, port int, every time.Duration) *windowWatch {
	t.Helper()
	w := &windowWatch{}
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			sc, err1 := ssConns(ctx, sender, port)
			rc, err2 := ssConns(ctx, receiver, port)
			if err1 != nil || err2 != nil {
				continue
			}
			s, r := busiest(sc, func(c ssConn) int64 { return c.BytesAcked }), busiest(rc, func(c ssConn) int64 { return c.BytesReceived })
			w.mu.Lock()
			if s.BytesAcked > 1<<20 { // the data connection, past its first round trips
				w.maxSndWnd = max(w.maxSndWnd, s.SndWnd)
				w.sender, w.receiver = s, r
				w.samples++
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *windowWatch) result() (maxSndWnd int64, sender, receiver ssConn, samples int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxSndWnd, w.sender, w.receiver, w.samples
}

func busiest(cs []ssConn, by func(ssConn) int64) ssConn {
	var b ssConn
	for _, c := range cs {
		if by(c) > by(b) {
			b = c
		}
	}
	return b
}
