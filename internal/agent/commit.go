package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/netio"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// The commit test: synchronous log shipping, emulated by probe/commit.
// The client's log blocks arrive on one data connection; the agent writes
// them to a log file of its own in a directory its operator allowed
// (diskpath.go), one test writing per filesystem at a time, as disk tests
// (a disk test and a commit test on one filesystem would measure each
// other), and acknowledges them. The file is probe/disk's, with all its
// safety rules. --ack receive writes nothing and needs no --disk-path.

// checkCommit refuses a commit test outside the operator's limits.
func (s *Server) checkCommit(spec wire.TestSpec) error {
	if err := commit.CheckSpec(spec); err != nil {
		return err
	}
	c := spec.Commit
	if spec.Block > s.cfg.MaxBlock {
		return fmt.Errorf("--block %s: the agent allows blocks of up to %s", metric.FormatBytes(spec.Block), metric.FormatBytes(s.cfg.MaxBlock))
	}
	if c.Ack == result.AckReceive {
		return nil
	}
	if len(s.cfg.DiskRoots) == 0 {
		return fmt.Errorf("--ack %s: this agent writes no files: it runs net commit with --ack receive only; its operator allows write and flush by starting it with --disk-path DIR", c.Ack)
	}
	if _, _, refusal := s.diskDir(c.Path); refusal != nil {
		return refusal
	}
	if c.Size > s.cfg.MaxDiskSize {
		return fmt.Errorf("--size %s: the agent allows test files up to %s (its --max-disk-size)",
			metric.FormatBytes(c.Size), metric.FormatBytes(s.cfg.MaxDiskSize))
	}
	return nil
}

// openCommit takes the filesystem and creates the log file (none to
// acknowledge on receipt).
func (s *Server) openCommit(spec wire.TestSpec) (farTest, *wire.RemoteError) {
	ct := &commitTest{s: s, spec: spec}
	if spec.Commit.Ack == result.AckReceive {
		ct.log, _ = commit.OpenLog(spec, "")
		return ct, nil
	}
	dir, real, refusal := s.diskDir(spec.Commit.Path) // again: it may have changed since checkCommit
	if refusal != nil {
		return nil, refusal
	}
	ct.key = fsKey(real)
	if refusal := s.holdFS(ct.key, real, wire.KindCommit); refusal != nil {
		return nil, refusal
	}
	log, err := commit.OpenLog(spec, dir)
	var t *disk.Target
	if err == nil {
		ct.log, t = log, log.Target()
	}
	if refusal := s.created(dir, t, err); refusal != nil {
		ct.close()
		return nil, refusal
	}
	return ct, nil
}

// commitTest is a commit test with its file created.
type commitTest struct {
	s    *Server
	spec wire.TestSpec
	key  string // the filesystem it holds; "" with --ack receive
	log  *commit.Log
	sock *netio.Socket
}

func (c *commitTest) accepted(a *wire.Accepted) {
	t := c.log.Target()
	if t == nil {
		return
	}
	notes := t.Notes()
	if st := t.Stale(); len(st) > 0 {
		notes = append(notes, disk.StaleNote(t.Dir(), st,
			fmt.Sprintf("`narrows disk --path %s --clean-stale`, run on the agent's host as the agent's user, removes them", t.Dir())))
	}
	a.Disk = &wire.DiskAccepted{Target: t.Summary(), File: t.Path(), Notes: notes}
}

func (c *commitTest) take(socks []*netio.Socket) { c.sock = socks[0] }

func (c *commitTest) prepare(ctx context.Context) error { return refused(c.log.Prepare(ctx)) }

func (c *commitTest) run(ctx context.Context, _ probe.Emit, done *wire.Done) error {
	start := time.Now()
	res, err := c.log.Serve(ctx, c.sock, c.s.cfg.DataTimeout)
	done.Commit = res
	if (err == nil || closedByPeer(err)) && ctx.Err() == nil && time.Since(start) < c.spec.Duration {
		// The client closed its side (or its kernel reset it, the process
		// gone with acknowledgements unread) before the test's duration,
		// which it counts from the agent's readiness, so from later than
		// start: it was interrupted (its Stop, sent first, is on its way)
		// or it is gone (its control connection is closing too). The
		// control connection says which, and the test ends as that, not as
		// completed or as a failed connection.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.s.cfg.DataTimeout):
		}
	}
	return refused(err)
}

// closedByPeer says whether a data connection's error is its peer closing
// it: a reset, or a write to a connection it closed.
func closedByPeer(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF)
}

// limit: the client sends for the duration; the blocks still in flight
// then take at most as long as the agent waits on a data connection that
// moves nothing.
func (c *commitTest) limit() time.Duration { return c.spec.Duration + c.s.cfg.DataTimeout }

func (c *commitTest) close() {
	if c.log != nil {
		if err := c.log.Close(); err != nil {
			c.s.cfg.Logger.Error("commit test file not removed", "dir", c.log.Target().Dir(), "err", err)
		}
		c.log = nil
	}
	if c.key != "" {
		c.s.letFS(c.key)
		c.key = ""
	}
}
