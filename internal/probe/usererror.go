package probe

import "fmt"

// UserError is a problem a person fixes (a wrong path, no permission, a
// size too large): the message is one line saying what and what to do,
// and cli prints it as it is. Probes return it for such problems, so the
// command needs to know one type, not one per probe.
type UserError struct {
	msg string
	err error
}

func (e *UserError) Error() string { return e.msg }
func (e *UserError) Unwrap() error { return e.err }

// UserErrorf makes a UserError; err (may be nil) is kept for errors.Is.
func UserErrorf(err error, format string, a ...any) *UserError {
	return &UserError{msg: fmt.Sprintf(format, a...), err: err}
}
