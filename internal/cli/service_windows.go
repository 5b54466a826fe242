//go:build windows

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/narrows/narrows/internal/untrusted"
)

// serviceName is the service's name and its Event Log source.
const serviceName = "narrows"

// serve runs the agent: under the Service Control Manager as a service,
// else at the console until Ctrl-C.
func serve(ctx context.Context, env Env, args []string) error {
	if startedByServices() {
		return serveService(ctx, env, args)
	}
	return serveWith(ctx, env, args, serveHooks{})
}

// startedByServices says whether the Service Control Manager started this
// process. Wine starts services in session 1, where IsWindowsService
// (which wants session 0) says no, so the parent's name is asked too; a
// process wrongly taken for a service finds out at once (serveService).
func startedByServices() bool {
	if ok, err := svc.IsWindowsService(); err == nil && ok {
		return true
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(os.Getppid()))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if windows.QueryFullProcessImageName(h, 0, &buf[0], &n) != nil {
		return false
	}
	return strings.EqualFold(filepath.Base(windows.UTF16ToString(buf[:n])), "services.exe")
}

// serveService runs serve as a service: its flags are the command line
// the service was installed with, its log the Event Log.
func serveService(ctx context.Context, env Env, args []string) error {
	var sink eventSink = discardEvents{}
	if l, err := eventlog.Open(serviceName); err == nil {
		defer l.Close()
		sink = l
	}
	senv := env
	senv.Stderr = eventStderr{sink}
	// The secret file's warnings too (OSEnv's ReadFile writes to its own),
	// once in the Event Log whatever the console was told.
	senv.warned = &onceLines{}
	senv.ReadFile = func(p string) ([]byte, error) { return readSecretFile(senv, p) }
	h := &agentService{ctx: ctx, env: senv, args: args, events: sink}
	err := svc.Run(serviceName, h)
	if errors.Is(err, windows.ERROR_FAILED_SERVICE_CONTROLLER_CONNECT) {
		// Not a service after all (startedByServices guessed): a console.
		return serveWith(ctx, env, args, serveHooks{})
	}
	if err != nil {
		return err
	}
	return h.err
}

type discardEvents struct{}

func (discardEvents) Info(uint32, string) error    { return nil }
func (discardEvents) Warning(uint32, string) error { return nil }
func (discardEvents) Error(uint32, string) error   { return nil }

// agentService is the svc.Handler that runs the agent.
type agentService struct {
	ctx    context.Context
	env    Env
	args   []string
	events eventSink
	err    error // the run's, for serve's exit code
}

// Execute runs the agent until the manager stops it. args are the start
// parameters (sc start narrows ARGS), not used: the flags are the
// installed command line's.
func (h *agentService) Execute(_ []string, r <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	report := func(s svcState) {
		switch s {
		case svcStartPending:
			changes <- svc.Status{State: svc.StartPending, WaitHint: 30_000}
		case svcRunning:
			changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
		case svcStopPending:
			changes <- svc.Status{State: svc.StopPending, WaitHint: 20_000}
		}
	}
	control := func(c svc.ChangeRequest) svcControl {
		switch c.Cmd {
		case svc.Stop, svc.Shutdown:
			return svcStop
		case svc.Interrogate:
			return svcInterrogate
		}
		return svcIgnore
	}
	h.err = runService(h.ctx, r, control, report, func(ctx context.Context, listening func()) error {
		return serveWith(ctx, h.env, h.args, serveHooks{listening: listening, events: h.events})
	})
	if h.err != nil {
		h.events.Error(eventID, "narrows serve stopped: "+untrusted.OneLine(h.err.Error())) //nolint:errcheck
	}
	return serviceExit(h.err)
}

// serviceCmd is narrows service: install, uninstall, start, stop, status.
func serviceCmd(ctx context.Context, env Env, args []string) error {
	const list = "install [serve flags], uninstall, start, stop or status"
	if len(args) == 0 {
		return usagef("service: name what to do: %s", list)
	}
	if isHelp(args[0]) {
		fmt.Fprintf(env.Stdout, "Usage: narrows service install [serve flags] | uninstall | start | stop | status\n"+
			"  install    install narrows serve with these flags as the service %q (automatic start, restarted on failure)\n"+
			"  uninstall  stop the service and remove it\n"+
			"  start, stop, status\n"+
			"The flags are serve's (narrows serve --help); the secret stays in --secret-file. Run from an elevated prompt.\n", serviceName)
		return nil
	}
	if args[0] != "install" && len(args) > 1 {
		return usagef("service %s takes no arguments", args[0])
	}
	switch args[0] {
	case "install":
		return serviceInstall(env, args[1:])
	case "uninstall":
		return serviceUninstall(env)
	case "start":
		return serviceStart(env)
	case "stop":
		return serviceStop(env)
	case "status":
		return serviceStatus(env)
	}
	return usagef("unknown service command %q: use %s", args[0], list)
}

// scmConnect opens the Service Control Manager, saying what to do when the
// prompt is not elevated.
func scmConnect(what string) (*mgr.Mgr, error) {
	m, err := mgr.Connect()
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return nil, usagef("service %s: access denied: run it from an elevated prompt (Run as administrator)", what)
	}
	if err != nil {
		return nil, fmt.Errorf("service %s: cannot reach the Service Control Manager: %v", what, err)
	}
	return m, nil
}

// onService opens the installed service and runs fn on it; what fn
// returns is said as "service WHAT: ...". A missing service or a refusal
// says what to do.
func onService(what string, fn func(*mgr.Service) error) error {
	m, err := scmConnect(what)
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	switch {
	case errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST):
		return usagef("service %s: the service %s is not installed (narrows service install)", what, serviceName)
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return usagef("service %s: access denied: run it from an elevated prompt (Run as administrator)", what)
	case err != nil:
		return fmt.Errorf("service %s: %v", what, err)
	}
	defer s.Close()
	if err := fn(s); err != nil {
		return fmt.Errorf("service %s: %v", what, err)
	}
	return nil
}

func serviceInstall(env Env, args []string) error {
	sargs, err := serviceArgs(env, args)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("service install: where is narrows.exe? %v", err)
	}
	m, err := scmConnect("install")
	if err != nil {
		return err
	}
	defer m.Disconnect()
	if s, err := m.OpenService(serviceName); err == nil {
		s.Close()
		return usagef("service install: the service %s is already installed: narrows service uninstall first", serviceName)
	}
	s, err := m.CreateService(serviceName, exe, mgr.Config{
		DisplayName: "narrows agent",
		Description: "narrows serve: the far end of narrows' network and storage measurements (" + strings.Join(sargs, " ") + ")",
		StartType:   mgr.StartAutomatic,
	}, append([]string{"serve"}, sargs...)...)
	if err != nil {
		return fmt.Errorf("service install: %v", err)
	}
	defer s.Close()
	// Restarted after a crash: 5 s, then 30 s, then each minute; the count
	// starts again after a day without failure.
	if err := s.SetRecoveryActions([]mgr.RecoveryAction{
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 30 * time.Second},
		{Type: mgr.ServiceRestart, Delay: time.Minute},
	}, 24*60*60); err != nil {
		fmt.Fprintf(env.Stderr, "narrows: warning: the service will not be restarted after a failure: %v\n", err)
	}
	if err := eventlog.InstallAsEventCreate(serviceName, eventlog.Error|eventlog.Warning|eventlog.Info); err != nil && !strings.Contains(err.Error(), "already exists") {
		fmt.Fprintf(env.Stderr, "narrows: warning: the Event Log source %s cannot be registered (%v): its events will show without their text\n", serviceName, err)
	}
	fmt.Fprintf(env.Stdout, "installed the service %s: %s serve %s\nit starts at boot; start it now with narrows service start\n", serviceName, exe, strings.Join(sargs, " "))
	return nil
}

func serviceUninstall(env Env) error {
	return onService("uninstall", func(s *mgr.Service) error {
		if st, err := s.Query(); err == nil && st.State != svc.Stopped {
			if err := stopAndWait(s); err != nil {
				return err
			}
		}
		if err := s.Delete(); err != nil {
			return err
		}
		eventlog.Remove(serviceName) //nolint:errcheck // gone already, or never made
		fmt.Fprintf(env.Stdout, "removed the service %s\n", serviceName)
		return nil
	})
}

func serviceStart(env Env) error {
	return onService("start", func(s *mgr.Service) error {
		if err := s.Start(); err != nil {
			if errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
				fmt.Fprintf(env.Stdout, "the service %s is already running\n", serviceName)
				return nil
			}
			return err
		}
		st, err := waitFor(s, svc.Running, 30*time.Second)
		if err != nil {
			return err
		}
		if st.State != svc.Running {
			return fmt.Errorf("the service stopped (%s): the Application event log, source %s, says why", exitText(st), serviceName)
		}
		fmt.Fprintf(env.Stdout, "the service %s is running (pid %d)\n", serviceName, st.ProcessId)
		return nil
	})
}

func serviceStop(env Env) error {
	return onService("stop", func(s *mgr.Service) error {
		if err := stopAndWait(s); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "the service %s is stopped\n", serviceName)
		return nil
	})
}

func serviceStatus(env Env) error {
	return onService("status", func(s *mgr.Service) error {
		st, err := s.Query()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("the service %s is %s", serviceName, stateText(st.State))
		switch {
		case st.State == svc.Running:
			line += fmt.Sprintf(" (pid %d)", st.ProcessId)
		case st.State == svc.Stopped && (st.Win32ExitCode != 0 || st.ServiceSpecificExitCode != 0):
			line += " (" + exitText(st) + ")"
		}
		if cmd := commandLine(s); cmd != "" {
			line += ": " + cmd
		}
		fmt.Fprintln(env.Stdout, line)
		return nil
	})
}

// stopAndWait asks the service to stop and waits until it has (waitFor
// says so when it has not).
func stopAndWait(s *mgr.Service) error {
	if _, err := s.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return err
	}
	_, err := waitFor(s, svc.Stopped, 30*time.Second)
	return err
}

// waitFor polls the service until it is in state want or stopped, or the
// time is up; it returns the last status.
func waitFor(s *mgr.Service, want svc.State, limit time.Duration) (svc.Status, error) {
	deadline := time.Now().Add(limit)
	for {
		st, err := s.Query()
		if err != nil || st.State == want || st.State == svc.Stopped || time.Now().After(deadline) {
			if err == nil && st.State != want && st.State != svc.Stopped {
				err = fmt.Errorf("still %s after %v", stateText(st.State), limit)
			}
			return st, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func stateText(s svc.State) string {
	switch s {
	case svc.Stopped:
		return "stopped"
	case svc.StartPending:
		return "starting"
	case svc.StopPending:
		return "stopping"
	case svc.Running:
		return "running"
	}
	return fmt.Sprintf("in state %d", s)
}

// exitText says how a stopped service ended: narrows' own exit code (2
// bad flags, 1 a failure) or Windows' error.
func exitText(st svc.Status) string {
	if st.Win32ExitCode == uint32(windows.ERROR_SERVICE_SPECIFIC_ERROR) {
		return fmt.Sprintf("exit code %d", st.ServiceSpecificExitCode)
	}
	return fmt.Sprintf("error %d: %v", st.Win32ExitCode, windows.Errno(st.Win32ExitCode))
}

// commandLine is the service's command line, or "". It asks for that
// alone: mgr's Config asks for more, which Wine does not answer.
func commandLine(s *mgr.Service) string {
	n := uint32(1024)
	for range 3 {
		b := make([]byte, n)
		p := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&b[0]))
		err := windows.QueryServiceConfig(s.Handle, p, n, &n)
		if err == nil {
			return windows.UTF16PtrToString(p.BinaryPathName)
		}
		if !errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) {
			return ""
		}
	}
	return ""
}
