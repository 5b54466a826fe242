package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
)

// customFlags are the flags that shape --profile custom.
var customFlags = []string{"rw", "mix", "block", "qd", "threads", "sync"}

func diskCmd(ctx context.Context, env Env, args []string) (err error) {
	fs := newFlags(env, "disk")
	path := fs.String("path", "", "the directory whose filesystem holds the data, log or backup files; narrows creates one test file there (on Linux without a name: nothing outlives narrows)")
	cleanStale := fs.Bool("clean-stale", false, "remove the test files that killed narrows runs left in --path (proven its own: name, marker, owner, a writer no longer running), then exit")
	device := fs.String("device", "", "instead of --path: a block device to READ (read patterns only; it is never written)")
	profiles := fs.String("profile", "", "profiles to run, comma-separated: data, log, backup, custom (default data,log,backup)")
	duration := fs.String("duration", "3s", "how long to measure each pattern")
	interval := fs.String("interval", "1s", "how often to report while measuring")
	size := fs.String("size", "1G", "size of the test file; larger than any cache in front of the disks measures the disks")
	buffered := fs.Bool("buffered", false, "go through the page cache instead of O_DIRECT")
	engine := fs.String("engine", disk.EngineAuto, "auto (io_uring where the kernel gives it), io_uring or portable (threads doing pread/pwrite)")
	seed := fs.Uint64("seed", 1, "seed of the random offsets: the same seed repeats the same I/O")
	asJSON := fs.Bool("json", false, "write JSON lines (intervals as they happen, then the summary) instead of a table")
	rw := fs.String("rw", string(disk.RandRead), "custom: read, write, randread, randwrite or mix")
	mix := fs.Int("mix", 70, "custom --rw mix: the percentage of reads")
	block := fs.String("block", "8K", "custom: the size of each I/O")
	qd := fs.Int("qd", 1, "custom: I/Os outstanding per thread (queue depth)")
	threads := fs.Int("threads", 1, "custom: threads, each keeping --qd I/Os outstanding")
	syncMode := fs.String("sync", result.SyncNone, "custom: none, fdatasync (after each write) or dsync (O_DSYNC writes)")
	if err := parse(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg := disk.Config{Dir: *path, Device: *device, Buffered: *buffered, Engine: *engine, Seed: *seed}
	switch {
	case *path == "" && *device == "":
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
	if !slices.Contains([]string{disk.EngineAuto, disk.EngineURing, disk.EnginePortable}, cfg.Engine) {
		return usagef("--engine %q: use auto, io_uring or portable", cfg.Engine)
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

	var custom []string
	for _, f := range customFlags {
		if set[f] {
			custom = append(custom, "--"+f)
		}
	}
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
		p := disk.Pattern{Profile: result.ProfileCustom, RW: disk.RW(*rw), ReadPercent: *mix, QD: *qd, Threads: *threads, Sync: *syncMode}
		if p.Block, err = metric.ParseSize(*block); err != nil {
			return usagef("--block: %v", err)
		}
		if p.RW != disk.Mix && set["mix"] {
			return usagef("--mix applies to --rw mix")
		}
		if err := p.Check(!cfg.Buffered); err != nil {
			return usagef("%v", err)
		}
		cfg.Patterns = append(cfg.Patterns, p)
	}
	if *device != "" {
		if cfg.Patterns, err = readOnly(cfg.Patterns); err != nil {
			return err
		}
	} else {
		for _, p := range cfg.Patterns {
			if p.Block*int64(p.Threads) > cfg.Size {
				return usagef("--size %s is too small for %s: use at least %s", *size, p.Name(), metric.FormatBytes(p.Block*int64(p.Threads)))
			}
		}
	}

	t, err := disk.Open(cfg)
	if err != nil {
		return diskError(err)
	}
	defer func() {
		if cerr := t.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for _, n := range t.Notes() {
		fmt.Fprintf(env.Stderr, "narrows: notice: %s\n", n)
	}
	if st := t.Stale(); len(st) > 0 {
		fmt.Fprintf(env.Stderr, "narrows: notice: %s holds %s left by narrows runs that were killed (%s): `narrows disk --path %s --clean-stale` removes them\n",
			t.Dir(), staleSummary(st), staleNames(st), *path)
	}
	sum := t.Summary()
	out := output(env, *asJSON)
	banner(env, *asJSON, "narrows disk → %s: %s", sum.Path, describe(t, sum, cfg))
	if err := t.Layout(ctx); err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return diskError(err)
	}
	rep := result.NewReport("disk", sum.Path, tool(), env.Now())
	res, runErr := t.Run(ctx, emitter(out))
	rep.Disk = res
	return diskError(finish(ctx, out, rep, runErr))
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

func describe(t *disk.Target, d *result.Disk, cfg disk.Config) string {
	var b strings.Builder
	if d.Device {
		fmt.Fprintf(&b, "block device, read only, %s", metric.FormatBytes(d.FileBytes))
	} else {
		if d.Filesystem != "" {
			fmt.Fprintf(&b, "%s, ", d.Filesystem)
		}
		if t.Path() != "" {
			fmt.Fprintf(&b, "test file %s (%s, removed at the end)", t.Path(), metric.FormatBytes(d.FileBytes))
		} else {
			fmt.Fprintf(&b, "test file in %s (%s, without a name: it goes when narrows does)", t.Dir(), metric.FormatBytes(d.FileBytes))
		}
	}
	io := "O_DIRECT"
	if !d.Direct {
		io = "buffered"
	}
	total := time.Duration(len(cfg.Patterns)) * cfg.Duration
	patterns := "patterns"
	if len(cfg.Patterns) == 1 {
		patterns = "pattern"
	}
	fmt.Fprintf(&b, "; engine %s, %s; %s: %d %s × %s ≈ %s", d.Engine, io, strings.Join(cfg.Profiles, ", "),
		len(cfg.Patterns), patterns, metric.FormatDuration(cfg.Duration), metric.FormatDuration(total))
	return b.String()
}

// diskError makes the disk probe's person-fixable errors usage errors:
// one line, exit code 2.
func diskError(err error) error {
	var ue *disk.UserError
	if errors.As(err, &ue) {
		return &usageError{ue.Error()}
	}
	return err
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
		return diskError(err)
	}
	if len(gone) == 0 {
		fmt.Fprintf(env.Stdout, "no test files left by killed narrows runs in %s\n", dir)
	}
	return nil
}

func staleSummary(st []disk.Stale) string {
	var n int64
	for _, s := range st {
		n += s.Bytes
	}
	files := "test file"
	if len(st) > 1 {
		files = "test files"
	}
	return fmt.Sprintf("%d %s (%s)", len(st), files, metric.FormatBytes(n))
}

func staleNames(st []disk.Stale) string {
	names := make([]string, len(st))
	for i, s := range st {
		names[i] = filepath.Base(s.Path)
	}
	return strings.Join(names, ", ")
}
