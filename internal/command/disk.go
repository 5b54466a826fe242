package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	probedisk "github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// Disk is `narrows disk`: storage as a database uses it, Disk.Patterns
// one after another for Disk.Duration each, on a test file in Disk.Dir
// (or reading Disk.Device). With On set the agent there runs the same
// patterns with the same probe on its own storage, in a directory its
// operator allowed (Disk.Dir, or the only one it allows when empty), and
// the Report is a local run's, the agent named in it.
type Disk struct {
	Disk probedisk.Config
	On   *client.Options // the agent whose storage is measured; nil: this machine's
}

// DefaultDisk is disk on the filesystem of dir here with the flags'
// defaults: the data, log and backup profiles, 3 s a pattern reported
// each second, a 1 GiB test file, O_DIRECT, the engine the system gives,
// seed 1.
func DefaultDisk(dir string) Disk {
	cfg := probedisk.Config{Dir: dir, Size: 1 << 30, Profiles: probedisk.DefaultProfiles, Duration: 3 * time.Second,
		Interval: time.Second, Engine: probedisk.EngineAuto, Seed: 1}
	for _, name := range cfg.Profiles {
		cfg.Patterns = append(cfg.Patterns, probedisk.Profiles[name]()...)
	}
	return Disk{Disk: cfg}
}

// notices gives Env.Note each notice of the run, as the probe (or the
// agent) says it before measuring: what it could not do as asked, test
// files killed runs left.
func notices(env Env, notes []string) {
	for _, n := range notes {
		env.note("narrows: notice: " + n)
	}
}

// Run measures the patterns, here or on the agent.
func (c Disk) Run(ctx context.Context, env Env) (*result.Report, error) {
	if c.On != nil {
		return c.runOn(ctx, env)
	}
	cfg := c.Disk
	var rep *result.Report
	res, runErr := probedisk.Measure(ctx, cfg, probedisk.Hooks{
		Opened: func(t *probedisk.Target) {
			notes := t.Notes()
			if st := t.Stale(); len(st) > 0 {
				notes = append(notes, probedisk.StaleNote(t.Dir(), st, fmt.Sprintf("`narrows disk --path %s --clean-stale` removes them", cfg.Dir)))
			}
			notices(env, notes)
			sum := t.Summary()
			env.say(fmt.Sprintf("narrows disk → %s: %s", sum.Path, describeDisk(t.Path(), t.Dir(), sum, cfg)))
		},
		LaidOut: func(t *probedisk.Target) { rep = result.NewReport("disk", t.Summary().Path, env.Tool, env.now()) },
	}, env.emit())
	if res == nil || rep == nil {
		// Nothing measured: the place, the file or its layout failed,
		// or the run was stopped first. No report: there is nothing in it.
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		return nil, runErr
	}
	rep.Disk = res
	return Finish(ctx, env.Tool, rep, runErr)
}

// runOn is the run on the agent c.On names.
func (c Disk) runOn(ctx context.Context, env Env) (*result.Report, error) {
	cfg := c.Disk
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	sess, err := Connect(ctx, *c.On)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	addr := c.On.Addr
	if cfg.Dir, err = agentDiskDir(sess, addr, cfg.Dir, "--to", env.Tool.Version); err != nil {
		return nil, err
	}
	rep := env.agentReport("disk", addr, sess)
	emit := env.emit()
	var target *result.Disk
	measured := false
	done, runErr := sess.RunFar(ctx, probedisk.Spec(cfg), func(a *wire.Accepted) error {
		if a.Disk == nil || a.Disk.Target == nil {
			return fmt.Errorf("the agent at %s accepted the disk test without saying where it runs", addr)
		}
		target = a.Disk.Target
		rep.Target = target.Path + " on " + addr
		notices(env, a.Disk.Notes)
		env.say(fmt.Sprintf("narrows disk → %s: %s", rep.Target, describeDisk(a.Disk.File, target.Path, target, cfg)))
		return nil
	}, func(iv result.Interval) {
		measured = true
		emit(iv)
	})
	switch {
	case done != nil && done.Disk != nil:
		rep.Disk = done.Disk
	case measured:
		// The agent went away mid-test: what it reported was emitted.
		rep.Disk = target
	case ctx.Err() != nil:
		// While the file was laid out, as a local run; the agent's not
		// saying Done in time after the Stop changes nothing of that.
		return nil, ErrInterrupted
	default:
		return nil, runErr
	}
	rep.Disk.Agent = addr
	return Finish(ctx, env.Tool, rep, runErr)
}

// agentDiskDir is the directory the agent at addr runs a disk test in:
// dir, or the one directory it allows when dir is empty; or, in words,
// why it runs none (too old, no --disk-path) or which to name (flag is
// the command's: --to, --on).
func agentDiskDir(sess *client.Session, addr, dir, flag, version string) (string, error) {
	allowed := sess.Limits.DiskPaths
	switch {
	case !sess.Runs(wire.KindDisk):
		release := "an earlier release"
		if sess.Software != "" {
			release = "narrows " + sess.Software
		}
		return "", errext.Userf(nil, "the agent at %s (%s) does not run disk tests: upgrade it to narrows %s or later", addr, release, version)
	case len(allowed) == 0:
		return "", errext.Userf(nil, "the agent at %s runs no disk tests: its operator allows them by starting it with --disk-path DIR (repeatable), naming the directories clients may measure", addr)
	case dir == "" && len(allowed) == 1:
		return allowed[0], nil
	case dir == "":
		return "", errext.Userf(nil, "--path is required with %s: the agent at %s allows disk tests in %s (its --disk-path)", flag, addr, strings.Join(allowed, ", "))
	}
	return dir, nil
}

// describeDisk is the banner's account of a run: the test file (named
// file, or in dir without a name), the engine, the patterns and how long.
func describeDisk(file, dir string, d *result.Disk, cfg probedisk.Config) string {
	var b strings.Builder
	if d.Device {
		fmt.Fprintf(&b, "block device, read only, %s", metric.FormatBytes(d.FileBytes))
	} else {
		if d.Filesystem != "" {
			fmt.Fprintf(&b, "%s, ", d.Filesystem)
		}
		if file != "" {
			fmt.Fprintf(&b, "test file %s (%s, removed at the end)", file, metric.FormatBytes(d.FileBytes))
		} else {
			fmt.Fprintf(&b, "test file in %s (%s, without a name: it goes when narrows does)", dir, metric.FormatBytes(d.FileBytes))
		}
	}
	io := d.DirectWord()
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
