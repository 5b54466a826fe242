package cli

import (
	"bufio"
	"context"
	"os"
	"strings"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/disk"
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
	out := output(env, *asJSON)
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
