package errext

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// otherKind stands for another package's error that says its own code
// (an agent's refusal, a database's error by kind).
type otherKind struct{ code int }

func (o otherKind) Error() string { return "other" }
func (o otherKind) ExitCode() int { return o.code }

// TestExitCode: the code an error ends narrows with is read once, through
// any wrapping; the first error that says a code gives it.
func TestExitCode(t *testing.T) {
	user := Userf(fs.ErrNotExist, "--path %s: no such directory; create it or name another", "/nope")
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"none", nil, ExitOK},
		{"a failure", errors.New("connection reset"), ExitFailed},
		{"a mistake", user, ExitUsage},
		{"a mistake wrapped twice", fmt.Errorf("plan sync: %w", fmt.Errorf("step 2: %w", user)), ExitUsage},
		{"another package's refusal", fmt.Errorf("plan: %w", otherKind{ExitUsage}), ExitUsage},
		{"another package's failure", otherKind{ExitFailed}, ExitFailed},
		{"text only: %v drops the chain", fmt.Errorf("plan: %v", user), ExitFailed},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("%s: ExitCode(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
	if got := user.Error(); got != "--path /nope: no such directory; create it or name another" {
		t.Errorf("the message is %q: only the line for the person, not the cause", got)
	}
	if !errors.Is(user, fs.ErrNotExist) || !IsUser(user) || IsUser(errors.New("x")) {
		t.Error("a User error keeps its cause for errors.Is and says it is the person's to fix")
	}
}
