package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// A run stops early in one of two ways: a signal that ends it (SIGINT,
// SIGTERM, SIGHUP where there are such), or standard output going away
// (`narrows ... | head -1`). Either cancels the run's context, so every
// command ends the way SIGINT ends it: the probe stops, what it created
// (disk's test file, db load's table) is removed, and the exit code says
// why: 128 + the signal's number, as a shell reports a death by signal.

// stopCause is why a run's context was cancelled.
type stopCause struct {
	sig syscall.Signal
	err error // the write to standard output that failed; nil for a signal
}

func (c *stopCause) Error() string {
	if c.err != nil {
		return "standard output was closed: " + c.err.Error()
	}
	return c.sig.String() + " received"
}

// Signals returns a context cancelled by the signals that end a run, and
// a function that stops listening for them. A write to a closed pipe no
// longer kills the process (SIGPIPE is caught): the write fails instead,
// and Main's stdout cancels the run (stdoutGuard).
func Signals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	// Caught, never read: the runtime then fails the write with EPIPE
	// rather than dying of SIGPIPE half way through a run.
	pipe := make(chan os.Signal, 1)
	if sigPipe != nil {
		signal.Notify(pipe, sigPipe)
	}
	done := make(chan struct{})
	// next is the next signal that ends the run: a reload signal is
	// handed to the command that asked for it (onReload) instead.
	next := func() (syscall.Signal, bool) {
		for {
			select {
			case s := <-ch:
				if reloaded(s) {
					continue
				}
				sig, _ := s.(syscall.Signal)
				return sig, true
			case <-done:
				return 0, false
			}
		}
	}
	go func() {
		sig, ok := next()
		if !ok {
			return
		}
		cancel(&stopCause{sig: sig})
		// The run is ending as the first signal asked: cleaning up, and
		// waiting a few seconds at most for an agent to end its test. A
		// second signal means now.
		if sig, ok := next(); ok {
			fmt.Fprintf(os.Stderr, "narrows: %s a second time: stopped at once; %s\n", signalName(sig), atOnce)
			os.Exit(128 + int(sig))
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			signal.Stop(ch)
			signal.Stop(pipe)
			cancel(nil)
		})
	}
}

// reloadHook is the command that reads its configuration again on the
// reload signal (SIGHUP where there is one; fleet watch's targets), which
// then no longer ends the run: a daemon's convention, as Prometheus and
// its exporters have it. nil: SIGHUP ends the run (a terminal or SSH
// session that went away).
var reloadHook struct {
	mu sync.Mutex
	fn func()
}

// onReload makes the reload signal call fn (which must not block) until
// the returned function is called; ok is false where the system has no
// such signal (Windows), and then fn is never called.
func onReload(fn func()) (stop func(), ok bool) {
	if reloadSignal == nil {
		return func() {}, false
	}
	reloadHook.mu.Lock()
	defer reloadHook.mu.Unlock()
	reloadHook.fn = fn
	return func() {
		reloadHook.mu.Lock()
		defer reloadHook.mu.Unlock()
		reloadHook.fn = nil
	}, true
}

// reloaded hands s to the reload hook when s is the reload signal and a
// command set one; it says whether it did.
func reloaded(s os.Signal) bool {
	if reloadSignal == nil || s != reloadSignal {
		return false
	}
	reloadHook.mu.Lock()
	fn := reloadHook.fn
	reloadHook.mu.Unlock()
	if fn == nil {
		return false
	}
	fn()
	return true
}

// atOnce is what a second signal leaves: nothing that outlives narrows,
// as after kill -9 (a test file has no name, an agent ends a test whose
// client has gone, db load's table is removed by its next run).
const atOnce = "an agent ends its test when the connection closes, a local test file has no name to leave, and a db load table left half-way is removed by the next db load"

// stopped is the exit code and the line for a run that ctx's cause ended
// early.
func stopped(ctx context.Context) (int, string) {
	const kept = "; the figures above are what was measured until then"
	var c *stopCause
	if !errors.As(context.Cause(ctx), &c) {
		return ExitInterrupted, "interrupted" + kept
	}
	switch {
	case c.err != nil && brokenPipe(c.err):
		// As a shell reports a death by SIGPIPE (13), on every system.
		return 128 + 13, "stopped: standard output was closed (broken pipe): whatever read it has gone"
	case c.err != nil:
		return ExitFailed, fmt.Sprintf("stopped: cannot write to standard output: %v", c.err)
	case c.sig == syscall.SIGINT || c.sig == 0:
		return ExitInterrupted, "interrupted" + kept
	}
	return 128 + int(c.sig), fmt.Sprintf("stopped by %s%s", signalName(c.sig), kept)
}

// ctrlC says whether ctx was ended by Ctrl-C (SIGINT) alone.
func ctrlC(ctx context.Context) bool {
	var c *stopCause
	return errors.As(context.Cause(ctx), &c) && c.err == nil && c.sig == syscall.SIGINT
}

// stdoutGuard is standard output: the first write that fails cancels the
// run (its cause the error), and later writes fail at once.
type stdoutGuard struct {
	mu     sync.Mutex
	w      io.Writer
	err    error
	cancel context.CancelCauseFunc
}

func (g *stdoutGuard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.w.Write(p)
	if err != nil {
		g.err = err
		g.cancel(&stopCause{err: err})
	}
	return n, err
}
