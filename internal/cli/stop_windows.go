//go:build windows

package cli

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// stopSignals end a run: Ctrl-C and the console closing or the system
// shutting down (which Go delivers as SIGTERM).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// There is no SIGPIPE: a write to a closed pipe fails, and stdoutGuard
// stops the run.
var sigPipe os.Signal

// There is no SIGHUP either: fleet watch's targets are read again by
// restarting it (or its service).
var reloadSignal os.Signal

func brokenPipe(err error) bool {
	return errors.Is(err, windows.ERROR_BROKEN_PIPE) || errors.Is(err, windows.ERROR_NO_DATA)
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "Ctrl-C"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
