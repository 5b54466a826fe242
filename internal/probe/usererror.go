package probe

import "github.com/narrows/narrows/internal/errext"

// UserErrorf is a problem a person fixes (a wrong path, no permission, a
// size too large): one line saying what and what to do, exit code 2
// (errext.User, narrows' one error shape); err (may be nil) is kept for
// errors.Is.
func UserErrorf(err error, format string, a ...any) error {
	return errext.Userf(err, format, a...)
}
