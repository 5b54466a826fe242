package cli

import (
	"bufio"
	"context"
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/probe/fleet"
	"github.com/narrows/narrows/internal/result"
)

// fleetDisk is `narrows fleet disk`: one disk profile on every agent of
// a fleet at once, started together.
func fleetDisk(ctx context.Context, env Env, args []string) (err error) {
	fs := newFlags(env, "fleet disk")
	def := command.DefaultDisk("").Disk
	on := fs.String("on", "", "the fleet's agents: HOST[:PORT],HOST[:PORT]... or @FILE (one a line, # comments)")
	path := fs.String("path", "", "the directory on every agent, inside its --disk-path (default: the one each allows)")
	profile := fs.String("profile", result.ProfileData, "the profile every host runs: data, log, backup or custom (the custom flags alone mean custom)")
	sweepFlag := fs.String("sweep", "", "step the whole fleet through queue depths together, e.g. qd=1,2,4,8,16,32,64: each shape of the profile at each depth")
	sloFlag := fs.String("slo", "", "with --sweep: the latency objective the knee holds, the fleet's merged quantile, e.g. p99=2ms (p50, p90, p99 or p99.9)")
	var cf customPattern
	cf.register(fs)
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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	custom := customGiven(set)
	if len(custom) > 0 && !set["profile"] {
		*profile = result.ProfileCustom
	}
	switch mk, ok := disk.Profiles[*profile]; {
	case *profile == result.ProfileCustom:
		p, err := cf.pattern(set)
		if err != nil {
			return err
		}
		cfg.Patterns = []disk.Pattern{p}
	case !ok:
		return usagef("--profile %q: use data, log, backup or custom", *profile)
	case len(custom) > 0:
		return usagef("%s shape --profile custom, not %s", strings.Join(custom, ", "), *profile)
	default:
		cfg.Patterns = mk()
	}
	cfg.Profiles = []string{*profile}
	c := command.FleetDisk{Disk: cfg, Names: names}
	if *sweepFlag != "" {
		if set["qd"] {
			return usagef("--qd with --sweep: the sweep sets each step's queue depth")
		}
		if c.Sweep, err = sweepDepths(*sweepFlag); err != nil {
			return err
		}
		if c.Disk.Patterns, err = fleet.Swept(cfg.Patterns, c.Sweep); err != nil {
			return usagef("--sweep %s: %v", *sweepFlag, err)
		}
	}
	if *sloFlag != "" {
		if *sweepFlag == "" {
			return usagef("--slo judges the steps of a sweep: add --sweep qd=1,2,4,8,16,32,64")
		}
		if c.SLO, err = sloObjective(*sloFlag); err != nil {
			return err
		}
	}
	if err := c.Disk.Check(); err != nil {
		return err
	}
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

// sweepDepths reads --sweep qd=1,2,4: queue depths, ascending, once each.
func sweepDepths(v string) ([]int, error) {
	what, list, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(what) != "qd" {
		return nil, usagef("--sweep %q: give the queue depths to step, e.g. qd=1,2,4,8,16,32,64", v)
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		qd, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || qd < 1 || qd > disk.MaxQD {
			return nil, usagef("--sweep %s: %q is not a queue depth from 1 to %d", v, f, disk.MaxQD)
		}
		if !slices.Contains(out, qd) {
			out = append(out, qd)
		}
	}
	if len(out) < 2 {
		return nil, usagef("--sweep %s: give at least two depths to step through", v)
	}
	slices.Sort(out)
	return out, nil
}

// sloObjective reads --slo p99=2ms.
func sloObjective(v string) (*result.FleetSLO, error) {
	name, bound, ok := strings.Cut(v, "=")
	name = strings.ToLower(strings.TrimSpace(name))
	q, known := result.LatencyQuantiles[name]
	if !ok || !known {
		return nil, usagef("--slo %q: give a quantile and its bound, e.g. p99=2ms (p50, p90, p99 or p99.9)", v)
	}
	d, err := time.ParseDuration(strings.TrimSpace(bound))
	if err != nil || d <= 0 || d > time.Hour {
		return nil, usagef("--slo %s: %q is not a duration such as 2ms or 500us", v, bound)
	}
	return &result.FleetSLO{Name: name, Quantile: q, Bound: result.Seconds(d)}, nil
}
