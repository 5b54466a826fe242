package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
)

// customFlags are the flags that shape --profile custom.
var customFlags = []string{"rw", "mix", "block", "qd", "threads", "sync"}

func diskCmd(ctx context.Context, env Env, args []string) (err error) {
	fs := newFlags(env, "disk")
	def := command.DefaultDisk("").Disk
	path := fs.String("path", "", "the directory whose filesystem holds the data, log or backup files; narrows creates one test file there (on Linux without a name: nothing outlives narrows)")
	cleanStale := fs.Bool("clean-stale", false, "remove the test files that killed narrows runs left in --path (proven its own: name, marker, owner, a writer no longer running), then exit")
	device := fs.String("device", "", "instead of --path: a block device to READ (read patterns only; it is never written)")
	profiles := fs.String("profile", "", "profiles to run, comma-separated: data, log, backup, custom (default data,log,backup)")
	duration := fs.String("duration", metric.FlagDuration(def.Duration), "how long to measure each pattern")
	interval := fs.String("interval", metric.FlagDuration(def.Interval), "how often to report while measuring")
	size := fs.String("size", "1G", "size of the test file; larger than any cache in front of the disks measures the disks")
	buffered := fs.Bool("buffered", def.Buffered, "go through the page cache instead of O_DIRECT (Windows: the system file cache instead of FILE_FLAG_NO_BUFFERING)")
	engine := fs.String("engine", def.Engine, "auto (io_uring where the kernel gives it; iocp on Windows), io_uring, iocp (Windows: overlapped I/O on a completion port) or portable (threads doing pread/pwrite)")
	seed := fs.Uint64("seed", def.Seed, "seed of the random offsets: the same seed repeats the same I/O")
	asJSON := fs.Bool("json", false, "write JSON lines (intervals as they happen, then the summary) instead of a table")
	var htmlPath string
	htmlFlag(fs, &htmlPath)
	var cf customPattern
	cf.register(fs)
	var to string
	stringFlag(fs, &to, "to", "", "measure the storage of the agent at HOST or HOST:PORT (narrows serve --disk-path DIR there) instead of this machine's: --path is then a directory on it, inside its --disk-path", "on")
	var af agentFlags
	af.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	set := given(fs)

	cfg := disk.Config{Dir: *path, Device: *device, Buffered: *buffered, Engine: *engine, Seed: *seed}
	switch {
	case to != "" && *device != "":
		return usagef("--device with --to: an agent measures only the directories its operator allowed (its --disk-path); read a device with `narrows disk --device` on that host")
	case to != "" && *cleanStale:
		return usagef("--clean-stale with --to: run `narrows disk --path DIR --clean-stale` on the agent's host, as the agent's user")
	case to == "" && (set["secret-file"] || set["insecure"] || set["timeout"]):
		return usagef("--secret-file, --insecure and --timeout apply to --to AGENT")
	case *path == "" && *device == "" && to == "":
		return usagef("--path is required: the directory whose filesystem to measure, e.g. --path /var/lib/postgresql")
	case *path != "" && *device != "":
		return usagef("--path and --device: choose one")
	}
	if *cleanStale {
		if *device != "" {
			return usagef("--clean-stale applies to --path")
		}
		return removeStale(env, *path)
	}
	if cfg.Duration, err = positiveDuration("--duration", *duration); err != nil {
		return err
	}
	if cfg.Interval, err = intervalFlag(*interval); err != nil {
		return err
	}
	if cfg.Size, err = metric.ParseSize(*size); err != nil {
		return usagef("--size: %v", err)
	}
	if cfg.Size < 1<<20 && *device == "" {
		return usagef("--size %s: use at least 1M", *size)
	}

	custom := customGiven(set)
	if cfg.Profiles, err = pickProfiles(*profiles, set["profile"], custom); err != nil {
		return err
	}
	if *device != "" && !set["profile"] && len(custom) == 0 {
		// The log profile only writes: a device gets the reads of the others.
		cfg.Profiles = []string{result.ProfileData, result.ProfileBackup}
	}
	for _, name := range cfg.Profiles {
		if name != result.ProfileCustom {
			cfg.Patterns = append(cfg.Patterns, disk.Profiles[name]()...)
			continue
		}
		p, err := cf.pattern(set)
		if err != nil {
			return err
		}
		cfg.Patterns = append(cfg.Patterns, p)
	}
	if *device != "" {
		if cfg.Patterns, err = readOnly(cfg.Patterns); err != nil {
			return err
		}
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	d := command.Disk{Disk: cfg}
	if to != "" {
		opts, err := af.options(env, "--to", to)
		if err != nil {
			return err
		}
		d.On = &opts
	}
	out := withHTML(output(env, *asJSON), htmlPath)
	rep, err := d.Run(ctx, coreEnv(env, out, *asJSON))
	return written(ctx, out, rep, err)
}

// customPattern is the flags that shape --profile custom, for disk and
// fleet disk.
type customPattern struct {
	rw, block, sync  *string
	mix, qd, threads *int
}

func (c *customPattern) register(fs *flag.FlagSet) {
	c.rw = fs.String("rw", string(disk.RandRead), "custom: read, write, randread, randwrite or mix")
	c.mix = fs.Int("mix", 70, "custom --rw mix: the percentage of reads")
	c.block = fs.String("block", "8K", "custom: the size of each I/O")
	c.qd = fs.Int("qd", 1, "custom: I/Os outstanding per thread (queue depth)")
	c.threads = fs.Int("threads", 1, "custom: threads, each keeping --qd I/Os outstanding")
	c.sync = fs.String("sync", result.SyncNone, "custom: none, fdatasync (after each write; Windows: FlushFileBuffers) or dsync (O_DSYNC writes; Windows: FILE_FLAG_WRITE_THROUGH)")
}

// pattern is the custom pattern the flags shape (set: the flags given).
func (c *customPattern) pattern(set map[string]bool) (disk.Pattern, error) {
	p := disk.Pattern{Profile: result.ProfileCustom, RW: disk.RW(*c.rw), ReadPercent: *c.mix, QD: *c.qd, Threads: *c.threads, Sync: *c.sync}
	var err error
	if p.Block, err = metric.ParseSize(*c.block); err != nil {
		return p, usagef("--block: %v", err)
	}
	if p.RW != disk.Mix && set["mix"] {
		return p, usagef("--mix applies to --rw mix")
	}
	return p, nil
}

// customGiven is the custom flags among set, as typed.
func customGiven(set map[string]bool) []string {
	var custom []string
	for _, f := range customFlags {
		if set[f] {
			custom = append(custom, "--"+f)
		}
	}
	return custom
}

// pickProfiles reads --profile. The custom flags alone mean --profile custom.
func pickProfiles(v string, given bool, custom []string) ([]string, error) {
	if !given {
		if len(custom) > 0 {
			return []string{result.ProfileCustom}, nil
		}
		return disk.DefaultProfiles, nil
	}
	want := map[string]bool{}
	for _, w := range strings.Split(v, ",") {
		w = strings.ToLower(strings.TrimSpace(w))
		switch {
		case w == "all":
			for _, p := range disk.DefaultProfiles {
				want[p] = true
			}
		case slices.Contains(disk.ProfileOrder, w):
			want[w] = true
		default:
			return nil, usagef("--profile %q: use data, log, backup or custom, comma-separated", w)
		}
	}
	if len(custom) > 0 && !want[result.ProfileCustom] {
		return nil, usagef("%s shape --profile custom: add custom to --profile", strings.Join(custom, ", "))
	}
	var out []string
	for _, p := range disk.ProfileOrder {
		if want[p] {
			out = append(out, p)
		}
	}
	return out, nil
}

// readOnly keeps the patterns that only read, for --device: the reads of
// data and backup. The log profile and a custom pattern that write are
// refused, not dropped.
func readOnly(ps []disk.Pattern) ([]disk.Pattern, error) {
	var out []disk.Pattern
	for _, p := range ps {
		switch {
		case !p.Writes():
			out = append(out, p)
		case p.Profile == result.ProfileLog || p.Profile == result.ProfileCustom:
			return nil, usagef("--device: the %s pattern %s writes; a device is only ever read (measure writes with --path DIR)", p.Profile, p.Name())
		}
	}
	if len(out) == 0 {
		return nil, usagef("--device: no read pattern to run; use --profile data or backup, or --rw read or randread")
	}
	return out, nil
}

// removeStale is --clean-stale: it removes only what disk.FindStale proves
// is a killed run's test file, and says what it removed.
func removeStale(env Env, dir string) error {
	if dir == "" {
		return usagef("--clean-stale: give the directory with --path")
	}
	gone, err := disk.RemoveStale(dir)
	for _, s := range gone {
		fmt.Fprintf(env.Stdout, "removed %s (%s, left by narrows pid %d started %s)\n", s.Path, metric.FormatBytes(s.Bytes), s.PID, s.Started.Format(time.RFC3339))
	}
	if err != nil {
		return err
	}
	if len(gone) == 0 {
		fmt.Fprintf(env.Stdout, "no test files left by killed narrows runs in %s\n", dir)
	}
	return nil
}
