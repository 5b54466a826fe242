package agent_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// commitSpec is a brief commit test acknowledged at flush in dir.
func commitSpec(dir string) wire.TestSpec {
	return commit.Spec(commit.Config{Block: 8 << 10, InFlight: 1, Ack: result.AckFlush, Flush: result.FlushFdatasync, Path: dir, Size: 1 << 20,
		Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond})
}

// TestCommitRefusedByAgent: the agent itself holds its limits on a commit
// test, whatever a client checked first (these specs go straight to it):
// each is refused in words before anything is created; a test within them
// is accepted with its one data connection, and the file it created is
// announced.
func TestCommitRefusedByAgent(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir, "--max-disk-size", "8M", "--max-test-memory", "2M", "--max-duration", "1s"})
	none := itest.StartAgent(t, nil)
	cases := []struct {
		name string
		addr string
		edit func(*wire.TestSpec)
		want string
	}{
		{"no commit spec", a.Addr, func(s *wire.TestSpec) { s.Commit = nil }, "names no acknowledgement point"},
		{"outside", a.Addr, func(s *wire.TestSpec) { s.Commit.Path = outside }, "is outside the directories this agent allows disk tests in: " + dir + " (its --disk-path)"},
		{"a long path", a.Addr, func(s *wire.TestSpec) { s.Commit.Path = dir + "/" + strings.Repeat("x/", wire.MaxDiskPath) }, "the agent takes at most 1024"},
		{"block over the bound", a.Addr, func(s *wire.TestSpec) { s.Block = wire.MaxCommitBlock + 1 }, "--block 1.00 MiB: use 512 B to 1 MiB"},
		{"a negative block", a.Addr, func(s *wire.TestSpec) { s.Block = -1 }, "use 512 B to 1 MiB"},
		{"in flight", a.Addr, func(s *wire.TestSpec) { s.Commit.InFlight = wire.MaxCommitInFlight + 1 }, "--in-flight 1025: use 1 to 1024"},
		{"past --max-test-memory", a.Addr, func(s *wire.TestSpec) { s.Commit.InFlight, s.Commit.Size = 512, 8<<20 }, "needs 4 MiB of buffers on the agent; it allows 2 MiB per test (its --max-test-memory): use a smaller --in-flight or --block"},
		{"past --max-disk-size", a.Addr, func(s *wire.TestSpec) { s.Commit.Size = 16 << 20 }, "--size 16 MiB: the agent allows test files up to 8 MiB (its --max-disk-size)"},
		{"past --max-duration", a.Addr, func(s *wire.TestSpec) { s.Duration = time.Minute }, "its --max-duration"},
		{"an unknown flush", a.Addr, func(s *wire.TestSpec) { s.Commit.Flush = "fsync" }, `--flush "fsync": use fdatasync or dsync`},
		{"a file too small for the blocks in flight", a.Addr, func(s *wire.TestSpec) { s.Block, s.Commit.InFlight = 512<<10, 3 }, "holds fewer than --in-flight 3 blocks"},
		{"write without --disk-path", none.Addr, func(s *wire.TestSpec) { s.Commit.Ack, s.Commit.Flush = result.AckWrite, "" }, "this agent writes no files: it runs net commit with --ack receive only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := dial(t, c.addr, itest.Secret)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			spec := commitSpec(dir)
			c.edit(&spec)
			_, err = s.Open(context.Background(), spec)
			var r *client.Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Message, c.want) {
				t.Fatalf("%v, want a refusal saying %q", err, c.want)
			}
		})
	}
	for _, d := range []string{dir, outside} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Fatalf("left behind in %s: %v", d, left)
		}
	}
	s, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Runs(wire.KindCommit) {
		t.Fatalf("capabilities %v", s.Capabilities)
	}
	res, err := commit.Run(context.Background(), s, commit.Config{Block: 8 << 10, InFlight: 1, Path: dir, Size: 1 << 20,
		Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}, func(result.Interval) {})
	if err != nil || res.Commits == 0 || res.Target == nil || res.Target.Path != dir {
		t.Fatalf("a test within the limits: %v, %+v", err, res)
	}
}

// TestCommitAndDiskShareNoFilesystem: a commit test that writes and a
// disk test on one filesystem would measure each other: while one holds
// it, the other is refused as busy, naming what holds it.
func TestCommitAndDiskShareNoFilesystem(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", one, "--disk-path", two})
	s1, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if _, err := s1.Open(context.Background(), commitSpec(one)); err != nil {
		t.Fatal(err)
	}
	s2, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	_, err = s2.Open(context.Background(), diskSpec(two))
	if !errors.Is(err, client.ErrBusy) || !strings.Contains(err.Error(), "a commit test is already running on the filesystem of "+two+" (in "+one+"): two at once would measure each other") {
		t.Fatalf("a disk test beside a commit test: %v", err)
	}
	// Acknowledging on receipt writes nothing and holds no filesystem.
	s3, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	res, err := commit.Run(context.Background(), s3, commit.Config{Block: 8 << 10, InFlight: 1, Ack: result.AckReceive,
		Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}, func(result.Interval) {})
	if err != nil || res.Commits == 0 {
		t.Fatalf("--ack receive beside a commit test that writes: %v, %d commits", err, res.Commits)
	}
}

// TestCommitOlderAgent: an agent from before commit tests announces no
// such capability; the command says so in one line, exit 2, and the
// probe in words, without asking it.
func TestCommitOlderAgent(t *testing.T) {
	restore := agent.AsOlderRelease()
	defer restore()
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), Software: "0.0.9"})
	defer stop()
	r := itest.Run(t, 30*time.Second, nil, "net", "commit", "--to", addr, "--ack", "receive", "--duration", "1s")
	want := "narrows: the agent at " + addr + " (narrows 0.0.9) does not run net commit: upgrade it to narrows "
	if r.Code != 2 || !strings.HasPrefix(r.Stderr, want) || strings.Count(r.Stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want exit 2 and one line starting %q", r.Code, r.Stderr, want)
	}
	s, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = commit.Run(context.Background(), s, commit.Config{Block: 8 << 10, InFlight: 1, Ack: result.AckReceive, Duration: time.Second, Interval: time.Second}, func(result.Interval) {})
	if err == nil || !strings.Contains(err.Error(), "(narrows 0.0.9) does not run net commit: upgrade it") {
		t.Fatalf("the probe against an older agent: %v", err)
	}
}
