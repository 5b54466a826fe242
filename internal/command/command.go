// Package command holds each command's typed core: a Config per command
// (what its flags say, checked and typed) whose Run measures and returns
// the finished Report, findings and all. The command line (internal/cli)
// reads flags into a Config, runs it and writes the Report; doctor
// (internal/doctor) builds Configs from its inputs and runs them in
// memory, each with the Reports of the steps before it. A wrong step is a
// compile error, not a flag refused at run time.
//
// A core prints nothing: its intervals go to Env.Emit as they are
// measured, its lines for a person (the banner, notes) to Env.Say.
// Mistakes the person can fix are errext user errors (exit 2); a run that
// fails after it measured returns its partial Report with the error.
package command

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

// Env is what every core is given besides its Config.
type Env struct {
	Now  func() time.Time      // the clock, for the report's time
	Tool result.Tool           // this narrows: its release, commit and protocol
	Emit func(result.Interval) // each interval as it is measured; nil: dropped
	Say  func(string)          // the banner for a person, above the output; nil: dropped
	// Note gets a line for the person beside the output (standard error
	// on the command line): a step of a plan as it starts, a test file a
	// killed run left, what could not be measured as asked; nil: dropped.
	Note func(string)
}

// Runner is any command's Config: doctor holds its steps as these.
type Runner interface {
	Run(ctx context.Context, env Env) (*result.Report, error)
}

func (e Env) emit() func(result.Interval) {
	if e.Emit == nil {
		return func(result.Interval) {}
	}
	return e.Emit
}

func (e Env) say(line string) {
	if e.Say != nil {
		e.Say(line)
	}
}

func (e Env) note(line string) {
	if e.Note != nil {
		e.Note(line)
	}
}

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// ErrInterrupted is a run that the person stopped (its context
// cancelled): its partial Report is still written.
var ErrInterrupted = errors.New("interrupted")

// ErrNotApplicable is a command that does not apply to what it was given
// (doctor's step without its inputs, a probe of something that is not
// there): not an error, a reason to skip, checked with errors.Is.
var ErrNotApplicable = errors.New("not applicable")

// NotApplicable says why a command does not apply, as ErrNotApplicable.
func NotApplicable(why string) error { return &notApplicable{why} }

type notApplicable struct{ why string }

func (n *notApplicable) Error() string        { return n.why }
func (n *notApplicable) Is(target error) bool { return target == ErrNotApplicable }

// agentReport is a command's Report on what it measured with the agent
// at target through sess, noting who measured with us: the agent's
// release, whether it proved itself, its host's facts (nil from an agent
// before them), and this host's routed to it.
func (e Env) agentReport(command, target string, sess *client.Session) *result.Report {
	rep := result.NewReport(command, target, e.Tool, e.now())
	rep.Agent, rep.Unauthenticated = sess.Software, !sess.Authenticated
	rep.AgentFacts = sess.Facts
	rep.Facts = hostFacts(e.Tool, sess.PeerIP())
	return rep
}

// dbReport is a db command's Report on the database at d (named without
// its password), with this host's facts on the interface routing to it.
func (e Env) dbReport(command string, d *dbconn.DSN) *result.Report {
	rep := result.NewReport(command, d.Redacted, e.Tool, e.now())
	rep.Facts = hostFacts(e.Tool, targetPeer(d.Host))
	return rep
}

// hostFacts are this host's facts, its interface the one routing to peer
// (an IP, or "" for every interface that is up): a few file reads and
// ioctls, bounded by sysinfo.
func hostFacts(tool result.Tool, peer string) *result.Facts {
	f := sysinfo.ReadFacts(peer)
	f.Narrows = tool.Version
	return f
}

// agentName is the agent as the person named it (to, a plan's report's
// target), else the address dialled.
func agentName(to string, agent client.Options) string {
	if to != "" {
		return to
	}
	return agent.Addr
}

// targetPeer is the address a report's target names, when it names one
// (HOST:PORT, or a database's host); "" for a path or a Unix socket.
func targetPeer(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "" || strings.ContainsAny(host, "/\\ =") {
		return ""
	}
	return sysinfo.PeerIP(host)
}

// Connect dials the agent; the errors a person can fix (the secret, the
// release, nothing listening) are user errors.
func Connect(ctx context.Context, opts client.Options) (*client.Session, error) {
	s, err := client.Dial(ctx, opts)
	if err != nil {
		if errors.Is(err, client.ErrAuth) || errors.Is(err, client.ErrVersion) || errors.Is(err, client.ErrNoAgent) {
			return nil, errext.Userf(err, "%s", err.Error())
		}
		return nil, err
	}
	return s, nil
}

// Finish ends a run that measured: a run error or an interruption marks
// the Report partial with why; the facts are this host's when nothing
// read them; the advisor gives the findings. The error it returns is the
// run's: runErr, ErrInterrupted when ctx ended the run, else nil.
func Finish(ctx context.Context, tool result.Tool, rep *result.Report, runErr error) (*result.Report, error) {
	if runErr != nil || ctx.Err() != nil {
		rep.Partial = true
		if runErr != nil {
			rep.Error = runErr.Error()
		} else {
			rep.Error = "interrupted"
		}
	}
	if rep.Facts == nil {
		rep.Facts = hostFacts(tool, targetPeer(rep.Target))
	}
	rep.Findings = advisor.Advise(rep)
	switch {
	case runErr != nil && ctx.Err() == nil:
		return rep, runErr
	case ctx.Err() != nil:
		return rep, ErrInterrupted
	}
	return rep, nil
}
