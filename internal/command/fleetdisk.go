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
	"github.com/narrows/narrows/internal/wire"
)

// FleetDisk is `narrows fleet disk`: Disk's patterns on every agent On
// names at once, in Disk.Dir on each (or the one directory each allows),
// started together.
type FleetDisk struct {
	On    []client.Options
	Names []string // as given, one per On
	Disk  probedisk.Config
}

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
			allowed := s.Limits.DiskPaths
			switch {
			case !s.Runs(wire.KindDisk) || !s.Together():
				t.Error = "the agent is older than fleet tests: upgrade it to narrows " + env.Tool.Version
			case len(allowed) == 0:
				t.Error = "the agent runs no disk tests: its operator allows them with --disk-path DIR"
			case cfg.Dir != "":
				t.Dir = cfg.Dir
			case len(allowed) == 1:
				t.Dir = allowed[0]
			default:
				t.Error = fmt.Sprintf("--path is required: the agent allows disk tests in %s", strings.Join(allowed, ", "))
			}
			if t.Error != "" {
				s.Close()
				return
			}
			t.Sess = s
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
	rep.Fleet = fleet.Disk(ctx, targets, fleet.Config{Disk: cfg})
	var runErr error
	if up == 0 {
		runErr = fmt.Errorf("no host of the fleet could run the test")
	}
	return Finish(ctx, env.Tool, rep, runErr)
}

func patternNames(cfg probedisk.Config) []string {
	var out []string
	for _, p := range cfg.Patterns {
		out = append(out, p.Name())
	}
	return out
}
