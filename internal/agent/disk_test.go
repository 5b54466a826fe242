package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// diskSpec is a brief custom disk test in dir.
func diskSpec(dir string) wire.TestSpec {
	return disk.Spec(disk.Config{Dir: dir, Size: 8 << 20, Profiles: []string{result.ProfileCustom}, Duration: 200 * time.Millisecond,
		Interval: 100 * time.Millisecond, Engine: disk.EngineAuto, Seed: 1,
		Patterns: []disk.Pattern{{Profile: result.ProfileCustom, RW: disk.RandRead, Block: 8 << 10, QD: 4, Threads: 1, Sync: result.SyncNone}}})
}

// TestDiskRefusedByAgent: the agent itself holds its limits on a disk
// test, whatever a client checked first (these specs come straight from
// the client library): each is refused in words before anything is
// created, and the agent then runs a test that keeps them.
func TestDiskRefusedByAgent(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", dir, "--max-disk-size", "8M", "--max-test-memory", "16M", "--max-duration", "1s"})
	cases := []struct {
		name string
		edit func(*wire.TestSpec)
		want string
	}{
		{"no disk spec", func(s *wire.TestSpec) { s.Disk = nil }, "names no directory"},
		{"outside", func(s *wire.TestSpec) { s.Disk.Path = outside }, "is outside the directories this agent allows disk tests in: " + dir + " (its --disk-path)"},
		{"dot-dot", func(s *wire.TestSpec) { s.Disk.Path = dir + "/../" + filepath.Base(outside) }, `".." is not allowed`},
		{"a long path", func(s *wire.TestSpec) { s.Disk.Path = dir + "/" + strings.Repeat("x/", wire.MaxDiskPath) }, "the agent takes at most 1024"},
		{"past --max-disk-size", func(s *wire.TestSpec) { s.Disk.Size = 16 << 20 }, "--size 16 MiB: the agent allows test files up to 8 MiB (its --max-disk-size)"},
		{"too many patterns", func(s *wire.TestSpec) {
			for len(s.Disk.Patterns) <= wire.MaxDiskPatterns {
				s.Disk.Patterns = append(s.Disk.Patterns, s.Disk.Patterns[0])
			}
		}, "17 patterns: the agent runs at most 16"},
		{"a pattern the command refuses", func(s *wire.TestSpec) { s.Disk.Patterns[0].QD = 100000 }, "--qd 100000"},
		{"an unknown profile", func(s *wire.TestSpec) { s.Disk.Patterns[0].Profile = "oltp" }, `profile "oltp"`},
		{"past --max-test-memory", func(s *wire.TestSpec) { s.Disk.Patterns[0].Block, s.Disk.Patterns[0].QD = 4<<20, 8 }, "needs 32 MiB of buffers on the agent; it allows 16 MiB per test (its --max-test-memory): use a smaller --block, --qd or --threads"},
		{"past --max-duration", func(s *wire.TestSpec) {
			s.Duration = 600 * time.Millisecond
			s.Disk.Patterns = append(s.Disk.Patterns, s.Disk.Patterns[0])
		}, "2 patterns × 600ms each: the agent allows up to 1s per test (its --max-duration)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := dial(t, a.Addr, itest.Secret)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			spec := diskSpec(dir)
			c.edit(&spec)
			_, err = s.RunFar(context.Background(), spec, func(*wire.Accepted) error { return nil }, func(result.Interval) {})
			var r *client.Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Message, c.want) {
				t.Fatalf("%v, want a refusal saying %q", err, c.want)
			}
		})
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Fatalf("the agent made %v outside its --disk-path", left)
	}
	s, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Runs(wire.KindDisk) || len(s.Limits.DiskPaths) != 1 || s.Limits.DiskPaths[0] != dir || s.Limits.MaxDiskSize != 8<<20 {
		t.Fatalf("announced: capabilities %v, disk paths %v, max disk size %d", s.Capabilities, s.Limits.DiskPaths, s.Limits.MaxDiskSize)
	}
	var records int
	var acc *wire.DiskAccepted
	done, err := s.RunFar(context.Background(), diskSpec(dir), func(a *wire.Accepted) error { acc = a.Disk; return nil },
		func(iv result.Interval) {
			if iv.Probe == "disk" && iv.Disk != nil {
				records++
			}
		})
	if err != nil || acc == nil || acc.Target.Path != dir || done.Disk == nil || len(done.Disk.Patterns) != 1 || done.Disk.Patterns[0].IOPS <= 0 || records == 0 {
		t.Fatalf("a test within the limits: %v; accepted %+v, done %+v, %d interval records", err, acc, done, records)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestDiskOneTestPerFilesystem: two disk tests on one filesystem would
// measure each other: while one holds it (accepted, even before it
// starts), another in any allowed directory on it is refused as busy, and
// runs once the first client has gone.
func TestDiskOneTestPerFilesystem(t *testing.T) {
	one, two := t.TempDir(), t.TempDir() // both on the filesystem of the temporary directory
	a := itest.StartAgent(t, []string{"--disk-path", one, "--disk-path", two})
	s1, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Open(context.Background(), diskSpec(one)); err != nil {
		t.Fatal(err)
	}
	s2, err := dial(t, a.Addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s2.Open(context.Background(), diskSpec(two))
	s2.Close()
	if !errors.Is(err, client.ErrBusy) || !strings.Contains(err.Error(), "a disk test is already running on the filesystem of "+two+" (in "+one+"): two at once would measure each other") {
		t.Fatalf("a second disk test on the same filesystem: %v", err)
	}
	s1.Close() // the first client goes before it starts its test
	for t0 := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		s3, err := dial(t, a.Addr, itest.Secret)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s3.RunFar(context.Background(), diskSpec(two), func(*wire.Accepted) error { return nil }, func(result.Interval) {})
		s3.Close()
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrBusy) || time.Since(t0) > 20*time.Second {
			t.Fatalf("once the first client left: %v", err)
		}
	}
}

// TestDiskOlderAgent: an agent from before disk tests announces no such
// capability, and the client says so in one line, exit 2, without asking
// it; asked anyway, such an agent refuses the kind as unknown.
func TestDiskOlderAgent(t *testing.T) {
	restore := agent.AsOlderRelease()
	defer restore()
	dir := t.TempDir()
	addr, stop := inProcess(t, agent.Config{Secret: []byte(itest.Secret), Software: "0.0.9", DiskRoots: []agent.DiskRoot{{Given: dir, Real: dir}}})
	defer stop()
	r := itest.Run(t, 30*time.Second, nil, "disk", "--on", addr, "--path", dir, "--profile", "log", "--size", "8M")
	want := "narrows: the agent at " + addr + " (narrows 0.0.9) does not run disk tests: upgrade it to narrows "
	if r.Code != 2 || !strings.HasPrefix(r.Stderr, want) || strings.Count(r.Stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want exit 2 and one line starting %q", r.Code, r.Stderr, want)
	}
	s, err := dial(t, addr, itest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Open(context.Background(), diskSpec(dir))
	if err == nil || !strings.Contains(err.Error(), `unknown test kind "disk"`) {
		t.Fatalf("a disk test asked of an older agent: %v", err)
	}
}

// TestResolveDiskPaths: the agent's --disk-path directories are checked
// once, at start: each must exist and be a directory; symbolic links are
// resolved then, and a link and its target named both stay both, so a
// client may use either name.
func TestResolveDiskPaths(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "backup")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	file := filepath.Join(real, "f")
	os.WriteFile(file, nil, 0o600)
	roots, err := agent.ResolveDiskPaths([]string{real, link, real})
	want := []agent.DiskRoot{{Given: real, Real: real}, {Given: link, Real: real}}
	if err != nil || len(roots) != 2 || roots[0] != want[0] || roots[1] != want[1] {
		t.Fatalf("ResolveDiskPaths = %v, %v; want %v", roots, err, want)
	}
	for _, bad := range []struct{ dir, want string }{
		{filepath.Join(real, "nope"), "does not exist"},
		{file, "is not a directory"},
		{"", "give a directory"},
	} {
		if _, err := agent.ResolveDiskPaths([]string{real, bad.dir}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("--disk-path %q: %v, want %q", bad.dir, err, bad.want)
		}
	}
}
