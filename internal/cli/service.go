package cli

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/narrows/narrows/internal/errext"
)

// narrows serve as a Windows service. The parts that need no Windows
// API live here, so that they are tested on every system: the service's
// states as it starts and stops, the log handler that writes to the
// Event Log, and the check of the command line install stores. The
// Service Control Manager's side is in service_windows.go.

// svcState is a service state the Service Control Manager is told.
type svcState uint8

const (
	svcStartPending svcState = iota + 1
	svcRunning
	svcStopPending
)

func (s svcState) String() string {
	return [...]string{"", "start pending", "running", "stop pending"}[s]
}

// svcControl is what a control request from the manager asks.
type svcControl uint8

const (
	svcIgnore      svcControl = iota // a control narrows does not accept
	svcStop                          // Stop, and Shutdown: the machine is going down
	svcInterrogate                   // report the state again
)

// runService runs the agent as a service: start pending until the agent
// listens, then running; a stop cancels the run's context (as Ctrl-C does
// at the console) and reports stop pending until the agent has closed
// its connections. It returns the run's error; the caller reports the
// service stopped, with the exit code serviceExit gives. R is the
// manager's request type (svc.ChangeRequest on Windows).
func runService[R any](ctx context.Context, requests <-chan R, control func(R) svcControl, report func(svcState), run func(ctx context.Context, listening func()) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	state := svcStartPending
	report(state)
	listening := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	stopping := ctx.Done()
	go func() {
		done <- run(ctx, func() { once.Do(func() { close(listening) }) })
	}()
	for {
		select {
		case <-listening:
			listening = nil
			if state == svcStartPending {
				state = svcRunning
				report(state)
			}
		case r := <-requests:
			switch control(r) {
			case svcStop:
				if state != svcStopPending {
					state = svcStopPending
					report(state)
					cancel()
				}
			case svcInterrogate:
				report(state)
			}
		case <-stopping:
			// A stop, or the process is ending (Signals).
			stopping = nil
			if state != svcStopPending {
				state = svcStopPending
				report(state)
			}
		case err := <-done:
			return err
		}
	}
}

// serviceExit is the exit code a stopped service reports: 0 for a clean
// stop, else a service-specific code as at the console: 2 for bad input
// (a flag in the service's command line), 1 for a failure.
func serviceExit(err error) (svcSpecific bool, code uint32) {
	if err == nil {
		return false, 0
	}
	return true, uint32(errext.ExitCode(err))
}

// eventSink is the Windows Event Log as eventlog.Log writes to it.
type eventSink interface {
	Info(eid uint32, msg string) error
	Warning(eid uint32, msg string) error
	Error(eid uint32, msg string) error
}

// eventID is the one event ID narrows writes: the message file that
// InstallAsEventCreate registers (EventCreate.exe's) prints IDs 1 to 1000
// as the text given.
const eventID = 1

// eventHandler is a slog.Handler for the Event Log: one event a record,
// its type by level (Error, Warning, else Information), its text the
// message then the attributes as slog's text handler writes them. The
// Event Log stamps the time, and the type says the level.
type eventHandler struct {
	text slog.Handler // formats into out
	out  *eventOut
}

// eventOut sends the text handler's one write per record to the sink,
// as the level Handle set; mu keeps level and write together.
type eventOut struct {
	mu    sync.Mutex
	level slog.Level
	sink  eventSink
}

func newEventHandler(sink eventSink, opts *slog.HandlerOptions) *eventHandler {
	o := *opts
	o.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
			return slog.Attr{}
		}
		return a
	}
	out := &eventOut{sink: sink}
	return &eventHandler{text: slog.NewTextHandler(out, &o), out: out}
}

func (h *eventHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.text.Enabled(ctx, l)
}

func (h *eventHandler) Handle(ctx context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.level = r.Level
	return h.text.Handle(ctx, r)
}

func (h *eventHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &eventHandler{text: h.text.WithAttrs(as), out: h.out}
}

func (h *eventHandler) WithGroup(name string) slog.Handler {
	return &eventHandler{text: h.text.WithGroup(name), out: h.out}
}

// Write is called by the text handler inside Handle, with mu held.
func (o *eventOut) Write(p []byte) (int, error) {
	msg := eventText(string(p))
	var err error
	switch {
	case o.level >= slog.LevelError:
		err = o.sink.Error(eventID, msg)
	case o.level >= slog.LevelWarn:
		err = o.sink.Warning(eventID, msg)
	default:
		err = o.sink.Info(eventID, msg)
	}
	return len(p), err
}

// eventText turns `msg="agent listening" addr=:7447` into `agent
// listening addr=:7447`: an event's first words are its message.
func eventText(line string) string {
	line = strings.TrimSuffix(line, "\n")
	rest, ok := strings.CutPrefix(line, slog.MessageKey+"=")
	if !ok {
		return line
	}
	if q, err := strconv.QuotedPrefix(rest); err == nil {
		if msg, err := strconv.Unquote(q); err == nil {
			return msg + rest[len(q):]
		}
	}
	return rest
}

// eventStderr is standard error for a service, which has none: what
// serve writes there (a warning about the secret file) goes to the Event
// Log as a warning, a line an event.
type eventStderr struct{ sink eventSink }

func (w eventStderr) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.sink.Warning(eventID, line) //nolint:errcheck // nowhere else to say it
		}
	}
	return len(p), nil
}

// serviceArgs checks the serve flags a service is to run with, as serve
// will check them at each start (reading the secret file and warning if
// others may read it), and returns them as the service's command line
// keeps them: each flag as --name=value, paths made absolute (a service
// starts in System32). The secret itself never goes on that line, where
// any user may read it (sc qc narrows): it must be in --secret-file,
// unless the agent is --insecure on loopback.
func serviceArgs(env Env, args []string) ([]string, error) {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && strings.EqualFold(name, "secret") || strings.HasPrefix(strings.ToUpper(a), "NARROWS_SECRET=") {
			return nil, usagef("service install: a secret on the command line can be read by any user of the machine (sc qc narrows): put it in a file and give --secret-file FILE")
		}
	}
	f := newServeFlags(env, "service install")
	if err := parseFlags(f.fs, args); err != nil {
		return nil, err
	}
	if f.fs.NArg() > 0 {
		// Not quoted back: it may be a secret pasted in the wrong place.
		return nil, usagef("service install: %d argument(s) after the flags: a service takes serve's flags only (narrows serve --help lists them)", f.fs.NArg())
	}
	if *f.secretFile == "" && !*f.insecure {
		if strings.TrimSpace(env.Getenv("NARROWS_SECRET")) != "" {
			return nil, usagef("service install: the service does not see this shell's NARROWS_SECRET: put the secret in a file and give --secret-file FILE")
		}
		return nil, usagef("service install: give --secret-file FILE (the service reads the secret from it at each start), or --insecure with --listen on a loopback address")
	}
	// The secret from the file only, as the service will read it; read
	// once (one warning), and first, so that no message below can quote
	// it back from a flag it was pasted into.
	fileOnly := env
	fileOnly.Getenv = func(k string) string {
		if k == "NARROWS_SECRET" {
			return ""
		}
		return env.Getenv(k)
	}
	var b []byte
	var readErr error
	read := false
	fileOnly.ReadFile = func(p string) ([]byte, error) {
		if !read {
			b, readErr = env.ReadFile(p)
			read = true
		}
		return b, readErr
	}
	if *f.secretFile != "" {
		if sec, err := secret(fileOnly, *f.secretFile); err == nil && len(sec) > 0 {
			for _, a := range args {
				if bytes.Contains([]byte(a), sec) {
					return nil, usagef("service install: the secret itself is on the command line, where any user of the machine can read it: give only --secret-file FILE")
				}
			}
		}
	}
	if _, _, err := f.config(fileOnly, nil); err != nil {
		return nil, err
	}
	var out []string
	var absErr error
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil && absErr == nil {
			absErr = usagef("service install: cannot make %s an absolute path: %v", p, err)
		}
		return a
	}
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "disk-path":
			for _, d := range f.diskPaths {
				out = append(out, "--disk-path="+abs(d))
			}
		case "secret-file":
			out = append(out, "--secret-file="+abs(fl.Value.String()))
		default:
			out = append(out, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	return out, absErr
}
