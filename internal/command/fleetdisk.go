package command

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	probedisk "github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/probe/fleet"
	"github.com/narrows/narrows/internal/result"
)

// FleetDisk is `narrows fleet disk`: Disk's patterns on every agent On
// names at once, in Disk.Dir on each (or the one directory each allows),
// started together.
type FleetDisk struct {
	On    []client.Options
	Names []string // as given, one per On
	Disk  probedisk.Config
	// Sweep is the queue depths Disk.Patterns step through (fleet.Swept
	// made them), SLO the knee's objective: the fleet's curves.
	Sweep []int
	SLO   *result.FleetSLO
}

// HostsFailed is a fleet run's error when some hosts gave no figures, or
// not all, and others did: the report is whole for those that ran, and
// names the rest, but the run did not measure what was asked of every
// host.
type HostsFailed struct {
	Failed, Hosts int
	First         string // the first's name and why
}

func (e *HostsFailed) Error() string {
	s := fmt.Sprintf("%d of the fleet's %d hosts gave no figures, or not all; the first, %s", e.Failed, e.Hosts, e.First)
	if e.Failed > 1 {
		s += " (the report names the others)"
	}
	return s
}

// ExitCode is errext.ExitFailed.
func (e *HostsFailed) ExitCode() int { return errext.ExitFailed }

var _ errext.HasExitCode = (*HostsFailed)(nil)

// MaxFleet bounds the hosts of one fleet run, and fleetDials the
// sessions opened at once.
const (
	MaxFleet   = 1000
	fleetDials = 32
)

// Run connects to every host (fleetDials at a time), runs the fleet's
// test on those that answered, and reports every host.
func (c FleetDisk) Run(ctx context.Context, env Env) (*result.Report, error) {
	cfg := c.Disk
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if len(c.On) == 0 || len(c.On) > MaxFleet {
		return nil, errext.Userf(nil, "--on names %d hosts: a fleet run takes 1 to %d", len(c.On), MaxFleet)
	}
	targets := connectFleet(ctx, c.On, c.Names, func(s *client.Session, addr string) (string, error) {
		dir, err := agentDiskDir(s, addr, cfg.Dir, "--on", env.Tool.Version)
		if err == nil && !s.Together() {
			err = fmt.Errorf("the agent at %s does not start tests together with others: upgrade it to narrows %s or later", addr, env.Tool.Version)
		}
		return dir, err
	})
	defer closeFleet(targets)
	up := 0
	for _, t := range targets {
		if t.Sess != nil {
			up++
		}
	}
	rep := result.NewReport("fleet disk", fmt.Sprintf("%d hosts", len(targets)), env.Tool, env.now())
	rep.Facts = hostFacts(env.Tool, "")
	env.say(fmt.Sprintf("narrows fleet disk → %d of %s: %s, %s each, started together",
		up, metric.Plural(int64(len(targets)), "host"), strings.Join(patternNames(cfg), ", "), metric.FlagDuration(cfg.Duration)))
	rep.Fleet = fleet.Disk(ctx, targets, fleet.Config{Disk: cfg, Sweep: c.Sweep, SLO: c.SLO})
	var runErr error
	if up == 0 {
		runErr = fmt.Errorf("no host of the fleet could run the test: each host's row says why (an agent not reachable, too old, or without --disk-path)")
	}
	var names, errs []string
	for _, h := range rep.Fleet.Hosts {
		names, errs = append(names, h.Name), append(errs, h.Error)
	}
	return finishFleet(ctx, env.Tool, rep, runErr, names, errs)
}

// finishFleet is Finish for a fleet run, whose hosts say (errs, one per
// name) why they have no figures or not all: a run that went well for
// some but not all returns HostsFailed.
func finishFleet(ctx context.Context, tool result.Tool, rep *result.Report, runErr error, names, errs []string) (*result.Report, error) {
	rep, err := Finish(ctx, tool, rep, runErr)
	if err != nil {
		return rep, err
	}
	hf := &HostsFailed{Hosts: len(errs)}
	for i, e := range errs {
		if e == "" {
			continue
		}
		if hf.Failed++; hf.Failed == 1 {
			hf.First = names[i] + ": " + e
		}
	}
	if hf.Failed > 0 {
		return rep, hf
	}
	return rep, nil
}

// connectFleet connects to every host of on (names as given, one per
// host), fleetDials at a time, and asks check of each session (what it
// returns is the host's Target.Dir); a host that cannot be reached or
// fails check has no session and says why.
func connectFleet(ctx context.Context, on []client.Options, names []string, check func(s *client.Session, addr string) (string, error)) []fleet.Target {
	targets := make([]fleet.Target, len(on))
	sem := make(chan struct{}, fleetDials)
	var wg sync.WaitGroup
	for i, o := range on {
		targets[i].Name = names[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t := &targets[i]
			s, err := Connect(ctx, o)
			if err != nil {
				t.Error = err.Error()
				return
			}
			dir, err := check(s, o.Addr)
			if err != nil {
				t.Error = err.Error()
				s.Close()
				return
			}
			t.Sess, t.Dir = s, dir
		}()
	}
	wg.Wait()
	return targets
}

// closeFleet closes the hosts' sessions: nothing is left on any agent.
func closeFleet(targets []fleet.Target) {
	for _, t := range targets {
		if t.Sess != nil {
			t.Sess.Close()
		}
	}
}

func patternNames(cfg probedisk.Config) []string {
	var out []string
	for _, p := range cfg.Patterns {
		out = append(out, p.Name())
	}
	return out
}
