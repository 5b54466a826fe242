package doctor

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/result"
)

// Check is what doctor makes sure of before its first step, so that what
// was given and cannot work is said at once, in one line, exit 2, not
// found minutes later as failed steps (issue 27: a --backup-path the
// agent does not allow ran 57 s and exited 0 with a failed step, a wrong
// password exited 0 with three):
//   - the backup path lies where the agent allows disk tests (its
//     --disk-path, in AgentDiskPaths);
//   - the primary answers a login, within timeout;
//   - each replica takes the login: a wrong password, user or database
//     is refused here, but a replica that does not answer is not, for
//     that is what db repl reports ("the standby is gone").
//
// The agent itself was checked when doctor connected to it.
func (in Inputs) Check(ctx context.Context, timeout time.Duration) error {
	if in.BackupPath != "" && in.Agent != nil {
		if err := backupPathAllowed(in.BackupPath, in.AgentDiskPaths, in.Agent.Addr); err != nil {
			return err
		}
	}
	if in.DSN != nil {
		if err := login(ctx, in.DSN, timeout); err != nil {
			return fmt.Errorf("doctor: --dsn: %w", err)
		}
	}
	for _, r := range in.Replicas {
		err := login(ctx, r.DSN, timeout)
		if err != nil && (ctx.Err() != nil || dbconn.Is(err, dbconn.Auth) || dbconn.Is(err, dbconn.NoDatabase) || dbconn.Is(err, dbconn.BadDSN)) {
			return fmt.Errorf("doctor: --replica-dsn %s: %w", r.Name, err)
		}
	}
	return nil
}

// login opens one session to d and closes it.
func login(ctx context.Context, d *dbconn.DSN, timeout time.Duration) error {
	c, err := dbconn.Open(ctx, d, dbconn.Options{Timeout: timeout})
	if err != nil {
		return err
	}
	return c.Close()
}

// backupPathAllowed says whether p lies in one of the directories the
// agent at addr allows disk tests in, compared by their words as the
// agent will (it refuses ".." and anything outside): the agent's host may
// be Windows, so both separators are read, and a drive letter's path
// without case. The agent still checks it, and that it exists, when the
// step runs.
func backupPathAllowed(p string, allowed []string, addr string) error {
	refuse := func(why string) error {
		return errext.Userf(nil, "doctor: --backup-path %s: %s", p, why)
	}
	if len(allowed) == 0 {
		return refuse(fmt.Sprintf("the agent at %s runs no disk tests: its operator allows them by starting it with --disk-path DIR", addr))
	}
	if !isAbs(p) {
		return refuse("give the directory's full path on the agent's host")
	}
	norm := func(s string) string {
		s = strings.ReplaceAll(s, `\`, "/")
		if len(s) >= 2 && s[1] == ':' {
			s = strings.ToLower(s)
		}
		return s
	}
	q := norm(p)
	for _, el := range strings.Split(q, "/") {
		if el == ".." {
			return refuse(`".." is not allowed: name the directory itself`)
		}
	}
	q = path.Clean(q)
	for _, a := range allowed {
		root := path.Clean(norm(a))
		if q == root || strings.HasPrefix(q, strings.TrimSuffix(root, "/")+"/") {
			return nil
		}
	}
	return refuse(fmt.Sprintf("the agent at %s allows disk tests only in %s (its --disk-path): give a directory inside one", addr, strings.Join(allowed, ", ")))
}

// isAbs: /x on Unix, C:\x or C:/x or \\server\share on Windows.
func isAbs(p string) bool {
	switch {
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, `\\`):
		return true
	case len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/'):
		return true
	}
	return false
}

// NotAllRan is doctor's error when a step it was asked to run (one that
// applied to what was given) failed or did not run: its budget ran out,
// the agent misbehaved. Exit code 1: a script that runs doctor learns
// that the answers are not all there; the report says which and why.
type NotAllRan struct {
	Asked  int
	Missed []result.DoctorStep // in order
}

// Error names the first step that did not run and why (the rest follow
// from it, often: an agent gone, the budget spent), and counts the others.
func (e *NotAllRan) Error() string {
	first := e.Missed[0]
	s := fmt.Sprintf("doctor: %d of the %d steps asked did not run to the end; the first, %s, %s: %s", len(e.Missed), e.Asked, first.Name, first.Status, first.Why)
	if len(e.Missed) > 1 {
		var rest []string
		for _, m := range e.Missed[1:] {
			rest = append(rest, m.Name)
		}
		s += " (then " + strings.Join(rest, ", ") + ")"
	}
	return s
}

// ExitCode is errext.ExitFailed.
func (e *NotAllRan) ExitCode() int { return errext.ExitFailed }

var _ errext.HasExitCode = (*NotAllRan)(nil)
