package cli

import (
	"bufio"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/probe/fleet"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
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
	var htmlPath string
	htmlFlag(fs, &htmlPath)
	var af agentFlags
	af.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	names, err := fleetHosts("--on", *on)
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
	set := given(fs)
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
	out := withHTML(output(env, *asJSON), htmlPath)
	rep, err := c.Run(ctx, coreEnv(env, out, *asJSON))
	return written(ctx, out, rep, err)
}

// fleetNet is `narrows fleet net`: streams from this host to every agent
// at once, as a primary ships its log to each replica, started together.
// The agents are --to, as in every command that reaches an agent (issue
// 27's one name), and as the data goes: to them.
func fleetNet(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "fleet net")
	to := fs.String("to", "", "the replicas' agents, which this host sends to: HOST[:PORT],HOST[:PORT]... or @FILE (one a line, # comments)")
	per := fs.Int("streams-per-host", 1, "streams to each host at once, one per database its replica receives (1 to 128)")
	duration := fs.String("duration", "10s", "how long to send, e.g. 10s, 1m")
	block := fs.String("block", "128K", "size of each write, e.g. 128K (binary units)")
	window := fs.String("window", "", "socket buffer size (SO_SNDBUF/SO_RCVBUF) at both ends, e.g. 256K; default: the OS's autotuning")
	var assume multiFlag
	fs.Var(&assume, "assume", "this host's link rate given by hand, nic=RATE (e.g. nic=10Gbit/s): where its NIC tells no true one (a VM's virtio NIC, a cloud instance's bandwidth)")
	asJSON := fs.Bool("json", false, "write the summary as JSON lines instead of a table")
	var htmlPath string
	htmlFlag(fs, &htmlPath)
	var af agentFlags
	af.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	names, err := fleetHosts("--to", *to)
	if err != nil {
		return err
	}
	cfg := stream.Config{Direction: wire.Forward, Streams: *per}
	if cfg.Duration, err = positiveDuration("--duration", *duration); err != nil {
		return err
	}
	if *per < 1 || *per > 128 {
		return usagef("--streams-per-host %d: use 1 to 128", *per)
	}
	if n := len(names) * *per; n > command.MaxFleetStreams {
		return usagef("--streams-per-host %d to %d hosts is %d streams: a fleet run sends at most %d", *per, len(names), n, command.MaxFleetStreams)
	}
	if cfg.Block, cfg.Window, err = blockWindow(*block, *window); err != nil {
		return err
	}
	c := command.FleetNet{Stream: cfg, Names: names}
	if c.NICRate, err = nicRate(assume); err != nil {
		return err
	}
	for _, n := range names {
		o, err := af.options(env, "--to", n)
		if err != nil {
			return err
		}
		c.To = append(c.To, o)
	}
	out := withHTML(output(env, *asJSON), htmlPath)
	rep, err := c.Run(ctx, coreEnv(env, out, *asJSON))
	return written(ctx, out, rep, err)
}

// nicRate reads fleet net's --assume: nic=RATE, this host's link rate,
// in bits per second on the wire (0: none given).
func nicRate(flags []string) (float64, error) {
	as, err := plan.ParseAssume(flags, []string{"nic"}, "nic=10Gbit/s")
	if err != nil {
		return 0, usagef("%v", err)
	}
	rate := 0.0
	for _, a := range as { // the last one given wins
		bytes, err := metric.ParseRate(a.Value)
		if err != nil {
			return 0, usagef("--assume %s: %v", a.Flag, err)
		}
		rate = 8 * bytes
	}
	return rate, nil
}

// fleetHosts reads the fleet's hosts, flag's value: a comma list, or
// @FILE with one host a line.
func fleetHosts(flag, v string) ([]string, error) {
	if v == "" {
		return nil, usagef("%s is required: the fleet's agents, HOST,HOST... or @FILE", flag)
	}
	var raw []string
	if file, ok := strings.CutPrefix(v, "@"); ok {
		f, err := os.Open(file)
		if err != nil {
			return nil, usagef("%s %s: %v", flag, v, err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			if line = strings.TrimSpace(line); line != "" {
				raw = append(raw, line)
			}
			if len(raw) > command.MaxFleet {
				return nil, usagef("%s %s: more than %d hosts", flag, v, command.MaxFleet)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, usagef("%s %s: %v", flag, v, err)
		}
	} else {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				raw = append(raw, h)
			}
		}
	}
	if len(raw) == 0 || len(raw) > command.MaxFleet {
		return nil, usagef("%s names %d hosts: give 1 to %d", flag, len(raw), command.MaxFleet)
	}
	seen := map[string]bool{}
	for _, h := range raw {
		if seen[h] {
			return nil, usagef("%s names %s twice", flag, h)
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
