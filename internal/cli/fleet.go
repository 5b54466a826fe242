package cli

import (
	"bufio"
	"context"
	"os"
	"strings"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
)

// fleetDisk is `narrows fleet disk`: one disk profile on every agent of
// a fleet at once, started together.
func fleetDisk(ctx context.Context, env Env, args []string) (err error) {
	fs := newFlags(env, "fleet disk")
	def := command.DefaultDisk("").Disk
	on := fs.String("on", "", "the fleet's agents: HOST[:PORT],HOST[:PORT]... or @FILE (one a line, # comments)")
	path := fs.String("path", "", "the directory on every agent, inside its --disk-path (default: the one each allows)")
	profile := fs.String("profile", result.ProfileData, "the profile every host runs: data, log or backup")
	duration := fs.String("duration", "10s", "how long to measure each pattern")
	size := fs.String("size", "1G", "size of each host's test file")
	seed := fs.Uint64("seed", def.Seed, "seed of the random offsets")
	asJSON := fs.Bool("json", false, "write the summary as JSON lines instead of a table")
	var af agentFlags
	af.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	names, err := fleetHosts(*on)
	if err != nil {
		return err
	}
	cfg := disk.Config{Dir: *path, Engine: def.Engine, Seed: *seed, Interval: def.Interval}
	if cfg.Duration, err = positiveDuration("--duration", *duration); err != nil {
		return err
	}
	cfg.Interval = min(cfg.Interval, cfg.Duration)
	if cfg.Size, err = metric.ParseSize(*size); err != nil || cfg.Size < disk.MinSize {
		return usagef("--size %s: use at least 1M", *size)
	}
	mk, ok := disk.Profiles[*profile]
	if !ok || *profile == result.ProfileCustom {
		return usagef("--profile %q: use data, log or backup", *profile)
	}
	cfg.Profiles, cfg.Patterns = []string{*profile}, mk()
	if err := cfg.Check(); err != nil {
		return err
	}
	c := command.FleetDisk{Disk: cfg, Names: names}
	for _, n := range names {
		o, err := af.options(env, "--on", n)
		if err != nil {
			return err
		}
		c.On = append(c.On, o)
	}
	out := output(env, *asJSON)
	rep, err := c.Run(ctx, coreEnv(env, out, *asJSON))
	return written(ctx, out, rep, err)
}

// fleetHosts reads --on: a comma list, or @FILE with one host a line.
func fleetHosts(v string) ([]string, error) {
	if v == "" {
		return nil, usagef("--on is required: the fleet's agents, HOST,HOST... or @FILE")
	}
	var raw []string
	if file, ok := strings.CutPrefix(v, "@"); ok {
		f, err := os.Open(file)
		if err != nil {
			return nil, usagef("--on %s: %v", v, err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			if line = strings.TrimSpace(line); line != "" {
				raw = append(raw, line)
			}
			if len(raw) > command.MaxFleet {
				return nil, usagef("--on %s: more than %d hosts", v, command.MaxFleet)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, usagef("--on %s: %v", v, err)
		}
	} else {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				raw = append(raw, h)
			}
		}
	}
	if len(raw) == 0 || len(raw) > command.MaxFleet {
		return nil, usagef("--on names %d hosts: give 1 to %d", len(raw), command.MaxFleet)
	}
	seen := map[string]bool{}
	for _, h := range raw {
		if seen[h] {
			return nil, usagef("--on names %s twice", h)
		}
		seen[h] = true
	}
	return raw, nil
}
