package wakeup

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// end is one end of the loopback connection, blocking in the kernel (the
// OS's files make them: netio's blocking connection on Linux, Winsock
// calls without an OVERLAPPED on Windows), with a receive timeout of 2 s.
type end interface {
	// recv reads what has arrived; idle is a receive that timed out.
	recv(b []byte) (n int, idle bool, err error)
	sendAll(b []byte) error
	// close shuts the connection (the other end reads its end) and frees
	// it; it is called when no call of this end's thread is under way.
	close()
}

// recvFull reads all of b from e.
func recvFull(e end, b []byte) error {
	for len(b) > 0 {
		n, idle, err := e.recv(b)
		switch {
		case idle:
			return errors.New("the echo thread did not answer within 2 s")
		case err != nil:
			return err
		case n == 0:
			return errors.New("the echo thread closed its end")
		}
		b = b[n:]
	}
	return nil
}

// threads is the pair: the client's thread on one CPU, the echo's on
// another, each locked to its goroutine for the pair's life (the threads
// end with it, so no other goroutine inherits their pinning). The pair
// adds two Ps while it lives: each thread keeps one through its calls
// (Linux's raw calls; on Windows the runtime takes a blocked call's P
// back only when no P is idle), and the rest of the program (the agent's
// heartbeats, a client's session) must still find one.
type threads struct {
	client, echo end
	req          chan runReq
	done         chan struct{}
	clientDone   chan struct{}
	echoDone     chan struct{}
	procs        int
}

type runReq struct {
	ctx context.Context
	d   time.Duration
	out chan runRes
}

type runRes struct {
	n    int64
	took time.Duration
	err  error
}

// newPair starts the pair on the first two CPUs this process may use,
// over the loopback connection the OS's file opens (after the pair's two
// Ps are added: netio gives a raw place only where a P is spare).
func newPair() (*threads, error) {
	set, err := cpus()
	if err != nil {
		return nil, err
	}
	if len(set) < 2 {
		return nil, errOneCPU
	}
	p := &threads{req: make(chan runReq), done: make(chan struct{}), clientDone: make(chan struct{}), echoDone: make(chan struct{})}
	p.procs = runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(p.procs + 2)
	if p.client, p.echo, err = loopback(); err != nil {
		runtime.GOMAXPROCS(p.procs)
		return nil, err
	}
	ready := make(chan error, 2)
	go p.echoLoop(set[1], ready)
	go p.clientLoop(set[0], ready)
	if err := errors.Join(<-ready, <-ready); err != nil {
		p.close()
		return nil, fmt.Errorf("pinning the threads: %w", err)
	}
	return p, nil
}

// msgSize is the message each way: a small query and its small answer.
const msgSize = 64

// pinned locks the calling goroutine to its thread for good and pins
// the thread to cpu, telling ready how it went.
func pinned(cpu int, ready chan<- error) bool {
	runtime.LockOSThread() // never unlocked: the thread ends with the pair
	err := pin(cpu)
	ready <- err
	return err == nil
}

func (p *threads) echoLoop(cpu int, ready chan<- error) {
	defer close(p.echoDone)
	if !pinned(cpu, ready) {
		return
	}
	buf := make([]byte, msgSize)
	for {
		n, idle, err := p.echo.recv(buf)
		if idle {
			// Idle for 2 s: only close ends the pair.
			select {
			case <-p.done:
				return
			default:
				continue
			}
		}
		if err != nil || n <= 0 {
			return
		}
		if err := p.echo.sendAll(buf[:n]); err != nil {
			return
		}
	}
}

func (p *threads) clientLoop(cpu int, ready chan<- error) {
	defer close(p.clientDone)
	if !pinned(cpu, ready) {
		return
	}
	buf := make([]byte, msgSize)
	serveRuns(p.done, p.req, 64, nil, func() error {
		if err := p.client.sendAll(buf); err != nil {
			return err
		}
		return recvFull(p.client, buf)
	})
}

// serveRuns answers req until done: each run makes round trips (trip)
// for its duration, the clock read after every every of them, with start
// called first with the run's duration (nil: nothing to do).
func serveRuns(done <-chan struct{}, req <-chan runReq, every int64, start func(time.Duration), trip func() error) {
	for {
		select {
		case <-done:
			return
		case r := <-req:
			var n int64
			var err error
			t0 := time.Now()
			end := t0.Add(r.d)
			if start != nil {
				start(r.d)
			}
			for err == nil {
				if err = trip(); err != nil {
					break
				}
				if n++; n%every == 0 && (!time.Now().Before(end) || r.ctx.Err() != nil) {
					break
				}
			}
			r.out <- runRes{n, time.Since(t0), err}
		}
	}
}

// run makes round trips for d and says how many, in how long.
func (p *threads) run(ctx context.Context, d time.Duration) (int64, time.Duration, error) {
	return ask(ctx, p.req, d)
}

// partners: the pair's two threads are this process's.
func (p *threads) partners() []int { return nil }

// ask hands a run of d to the thread that reads req, and waits for it.
func ask(ctx context.Context, req chan<- runReq, d time.Duration) (int64, time.Duration, error) {
	out := make(chan runRes, 1)
	select {
	case req <- runReq{ctx, d, out}:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	r := <-out
	return r.n, r.took, r.err
}

// errOneCPU: the experiment needs two CPUs.
var errOneCPU = errors.New("one CPU only: the two threads would take turns on it, and it would never idle; run narrows where it may use two CPUs (its affinity, a container's cpuset)")

// close ends both threads, the client's first (it waits for a request,
// in no call), then the echo's, which reads the client's end shut (or at
// worst its next receive timeout), so no call is left on a closed end.
func (p *threads) close() {
	close(p.done)
	<-p.clientDone
	p.client.close()
	<-p.echoDone
	p.echo.close()
	runtime.GOMAXPROCS(p.procs)
}
