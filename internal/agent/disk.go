package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/wire"
)

// The disk test: `narrows disk`'s patterns, measured by probe/disk on
// the agent's own storage, in a directory its operator allowed
// (diskpath.go), one test per filesystem at a time. Every safety rule of
// the probe holds as in a local run, since it is the same code: its own
// file only (O_TMPFILE, or O_CREAT|O_EXCL), the free-space checks, the
// marker, removal on every way out.

// checkDisk refuses a disk test outside the operator's limits.
func (s *Server) checkDisk(spec wire.TestSpec) error {
	d := spec.Disk
	if d == nil {
		return errors.New("disk: the test names no directory and no patterns")
	}
	if _, _, refusal := s.diskDir(d.Path); refusal != nil {
		return refusal
	}
	if d.Size > s.cfg.MaxDiskSize {
		return fmt.Errorf("--size %s: the agent allows test files up to %s (its --max-disk-size)",
			metric.FormatBytes(d.Size), metric.FormatBytes(s.cfg.MaxDiskSize))
	}
	n := len(d.Patterns)
	if n > wire.MaxDiskPatterns {
		return fmt.Errorf("%d patterns: the agent runs at most %d in one test", n, wire.MaxDiskPatterns)
	}
	if err := disk.ConfigOf(spec).Check(); err != nil {
		return err
	}
	if n > 0 && spec.Duration > s.cfg.MaxDuration/time.Duration(n) {
		return fmt.Errorf("%d patterns × %s each: the agent allows up to %s per test (its --max-duration): use fewer profiles or a shorter --duration",
			n, spec.Duration, s.cfg.MaxDuration)
	}
	return nil
}

// openDisk takes the filesystem for this test and creates its file.
func (s *Server) openDisk(spec wire.TestSpec) (farTest, *wire.RemoteError) {
	// Again: the directory may have changed since checkDisk.
	dir, real, refusal := s.diskDir(spec.Disk.Path)
	if refusal != nil {
		return nil, refusal
	}
	key := fsKey(real)
	if refusal := s.holdFS(key, real, wire.KindDisk); refusal != nil {
		return nil, refusal
	}
	dt := &diskTest{s: s, key: key, cfg: disk.ConfigOf(spec)}
	dt.cfg.Dir = dir
	t, err := disk.Open(dt.cfg)
	if err == nil {
		dt.t = t
	}
	if refusal := s.created(dir, t, err); refusal != nil {
		dt.close()
		return nil, refusal
	}
	return dt, nil
}

// created says why a test file disk.Open made (or failed to make) in dir
// cannot be used: the probe's refusal, or, the probe resolving the path
// itself, a file that went outside the allowed directories (a symbolic
// link swapped in since the check is caught here, before anything but
// the marker is written).
func (s *Server) created(dir string, t *disk.Target, err error) *wire.RemoteError {
	switch {
	case errext.IsUser(err):
		return &wire.RemoteError{Code: wire.CodeRefused, Message: err.Error()}
	case err != nil:
		return &wire.RemoteError{Code: wire.CodeInternal, Message: err.Error()}
	case !s.inside(t.Dir(), false):
		return &wire.RemoteError{Code: wire.CodeLimit,
			Message: fmt.Sprintf("--path %s now leads to %s, outside the directories this agent allows disk tests in: %s", dir, t.Dir(), s.allowed())}
	}
	return nil
}

// diskTest is a disk test with its file created.
type diskTest struct {
	s   *Server
	key string // the filesystem it holds (Server.disks)
	cfg disk.Config
	t   *disk.Target
}

func (d *diskTest) accepted(a *wire.Accepted) {
	notes := d.t.Notes()
	if st := d.t.Stale(); len(st) > 0 {
		notes = append(notes, disk.StaleNote(d.t.Dir(), st,
			fmt.Sprintf("`narrows disk --path %s --clean-stale`, run on the agent's host as the agent's user, removes them", d.t.Dir())))
	}
	a.Disk = &wire.DiskAccepted{Target: d.t.Summary(), File: d.t.Path(), Notes: notes}
}

func (d *diskTest) prepare(ctx context.Context) error { return refused(d.t.Layout(ctx)) }

func (d *diskTest) run(ctx context.Context, emit probe.Emit, done *wire.Done) error {
	res, err := d.t.Run(ctx, emit)
	done.Disk = res
	return refused(err)
}

// limit: each pattern's duration, and as long again as the agent waits on
// a data connection that moves nothing for its I/Os in flight to end.
func (d *diskTest) limit() time.Duration {
	return time.Duration(len(d.cfg.Patterns)) * (d.cfg.Duration + d.s.cfg.DataTimeout)
}

func (d *diskTest) close() {
	if d.t != nil {
		if err := d.t.Close(); err != nil {
			d.s.cfg.Logger.Error("disk test file not removed", "dir", d.t.Dir(), "err", err)
		}
		d.t = nil
	}
	d.s.letFS(d.key)
}

// fsHolder is the test that writes on a filesystem (Server.disks).
type fsHolder struct {
	kind string // wire.KindDisk or KindCommit
	dir  string // where, symbolic links resolved
}

// holdFS takes the filesystem key (the one under dir) for a test of kind,
// or says, busy, which test holds it: two tests writing one filesystem
// at once would measure each other.
func (s *Server) holdFS(key, dir, kind string) *wire.RemoteError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, busy := s.disks[key]; busy {
		return &wire.RemoteError{Code: wire.CodeBusy, RetryAfter: 5 * time.Second,
			Message: fmt.Sprintf("a %s test is already running on the filesystem of %s (in %s): two at once would measure each other; try again when it ends", other.kind, dir, other.dir)}
	}
	s.disks[key] = fsHolder{kind: kind, dir: dir}
	return nil
}

// letFS gives back what holdFS took.
func (s *Server) letFS(key string) {
	s.mu.Lock()
	delete(s.disks, key)
	s.mu.Unlock()
}

// refused marks the probe's errors that a person fixes.
func refused(err error) error {
	if errext.IsUser(err) {
		return refusedError{err}
	}
	return err
}
