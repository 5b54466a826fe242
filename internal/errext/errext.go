// Package errext is narrows' one error shape (after grafana/k6's errext):
// an error says the exit code it ends narrows with, and cli.Main reads it
// once, whatever wrapped it on the way up. A mistake a person fixes (a
// wrong flag, a path they cannot use, what an agent's operator refused) is
// a User error: one line saying what is wrong and what to do, exit code 2.
// Everything else fails with 1. It imports nothing of narrows.
package errext

import (
	"errors"
	"fmt"
)

// The exit codes narrows ends with.
const (
	ExitOK     = 0
	ExitFailed = 1 // the run failed: nothing answered, a measurement broke
	ExitUsage  = 2 // a mistake a person fixes: the line says what and what to do
)

// HasExitCode is an error that says the exit code narrows ends with.
// Types of other packages (an agent's refusal, a database's "wrong
// password") implement it rather than be translated at each call site.
type HasExitCode interface {
	error
	ExitCode() int
}

// User is a mistake a person fixes: its message is one line saying what
// and what to do, printed as it is.
type User struct {
	msg string
	err error
}

func (e *User) Error() string { return e.msg }
func (e *User) Unwrap() error { return e.err }

// ExitCode is ExitUsage.
func (e *User) ExitCode() int { return ExitUsage }

// Userf makes a User error; err (may be nil) is kept for errors.Is and
// errors.As, not printed.
func Userf(err error, format string, a ...any) error {
	return &User{msg: fmt.Sprintf(format, a...), err: err}
}

// ExitCode is the code err ends narrows with: nil is ExitOK; the first
// error in its chain that says a code gives it; any other, ExitFailed.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var c HasExitCode
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return ExitFailed
}

// IsUser says whether err is a mistake a person fixes (ExitUsage).
func IsUser(err error) bool { return ExitCode(err) == ExitUsage }
