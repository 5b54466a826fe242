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
	targets := make([]fleet.Target, len(c.On))
	sem := make(chan struct{}, fleetDials)
	var wg sync.WaitGroup
	for i, o := range c.On {
		targets[i].Name = c.Names[i]
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
			dir, err := agentDiskDir(s, o.Addr, cfg.Dir, "--on", env.Tool.Version)
			if err == nil && !s.Together() {
				err = fmt.Errorf("the agent at %s does not start tests together with others: upgrade it to narrows %s or later", o.Addr, env.Tool.Version)
			}
			if err != nil {
				t.Error = err.Error()
				s.Close()
				return
			}
			t.Sess, t.Dir = s, dir
		}()
	}
	wg.Wait()
	defer func() {
		for _, t := range targets {
			if t.Sess != nil {
				t.Sess.Close()
			}
		}
	}()
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
	rep, err := Finish(ctx, env.Tool, rep, runErr)
	if err != nil {
		return rep, err
	}
	var failed []result.FleetHost
	for _, h := range rep.Fleet.Hosts {
		if h.Error != "" {
			failed = append(failed, h)
		}
	}
	if len(failed) > 0 {
		return rep, &HostsFailed{Failed: len(failed), Hosts: len(rep.Fleet.Hosts), First: failed[0].Name + ": " + failed[0].Error}
	}
	return rep, nil
}

func patternNames(cfg probedisk.Config) []string {
	var out []string
	for _, p := range cfg.Patterns {
		out = append(out, p.Name())
	}
	return out
}
