//go:build unix

package cli

import (
	"errors"
	"os"
	"syscall"
)

// stopSignals end a run: Ctrl-C, kill, and a terminal or SSH session
// that went away.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

var sigPipe os.Signal = syscall.SIGPIPE

// reloadSignal asks a command that set a reload hook (onReload) to read
// its configuration again, instead of ending the run.
var reloadSignal os.Signal = syscall.SIGHUP

func brokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "Ctrl-C (SIGINT)"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP (the terminal or SSH session went away)"
	}
	return s.String()
}
