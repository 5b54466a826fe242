package commit_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/commit"
	"github.com/narrows/narrows/internal/result"

	"github.com/narrows/narrows/internal/errext"
)

const secret = "commit-test-secret-0123456789"

// agentAt runs an agent in this process on 127.0.0.1:0 that allows dir
// (none: it writes no files), and a session to it.
func agentAt(t *testing.T, cfg agent.Config, dir string) *client.Session {
	t.Helper()
	if dir != "" {
		roots, err := agent.ResolveDiskPaths([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		cfg.DiskRoots = roots
	}
	cfg.Secret = []byte(secret)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.New(cfg).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	s, err := client.Dial(context.Background(), client.Options{Addr: ln.Addr().String(), Secret: []byte(secret), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func empty(t *testing.T, dir string) {
	t.Helper()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind in %s: %v", dir, left)
	}
}

// atLeast says a ≥ b but for the histogram's rounding (0.1%).
func atLeast(a, b result.Seconds) bool { return float64(a) >= 0.99*float64(b) }

// TestCommitAcks: each acknowledgement point on a real file in a
// temporary directory: the blocks counted alike at both ends, their bytes
// exact; what the agent timed of its part is there for what the point
// waits for and absent for what it skips; each block's commit took at
// least its own write or flush, so every quantile of the commits is at
// least the agent's; the file is gone afterwards.
func TestCommitAcks(t *testing.T) {
	dir := t.TempDir()
	s := agentAt(t, agent.Config{}, dir)
	for _, c := range []struct{ ack, flush string }{
		{result.AckReceive, ""}, {result.AckWrite, ""}, {result.AckFlush, result.FlushFdatasync}, {result.AckFlush, result.FlushDsync},
	} {
		t.Run(c.ack+c.flush, func(t *testing.T) {
			var records int
			res, err := commit.Run(context.Background(), s, commit.Config{Block: 8 << 10, InFlight: 1, Ack: c.ack, Flush: c.flush, Size: 4 << 20,
				Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond}, func(iv result.Interval) {
				if iv.Probe == result.ProbeCommit && iv.Commit != nil && iv.Commit.Commits > 0 {
					records++
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Commits == 0 || res.Bytes != res.Commits*8192 || records == 0 || res.Stopped != "" || res.Rate <= 0 {
				t.Fatalf("%d commits, %d bytes, %d records, stopped %q, rate %v", res.Commits, res.Bytes, records, res.Stopped, res.Rate)
			}
			if res.Config.Ack != c.ack || res.Config.Flush != c.flush || res.Config.InFlight != 1 || res.Config.BlockBytes != 8192 {
				t.Errorf("config %+v", res.Config)
			}
			wantWrite := c.ack == result.AckWrite || c.flush == result.FlushFdatasync
			wantFlush := c.ack == result.AckFlush
			if (res.AgentWrite != nil) != wantWrite || (res.AgentFlush != nil) != wantFlush || (res.Target != nil) != (c.ack != result.AckReceive) {
				t.Fatalf("agent write %v, flush %v, target %v", res.AgentWrite, res.AgentFlush, res.Target)
			}
			for _, a := range []*result.Latencies{res.AgentWrite, res.AgentFlush} {
				if a == nil {
					continue
				}
				l := res.Latency
				if !atLeast(l.Min, a.Min) || !atLeast(l.P50, a.P50) || !atLeast(l.P99, a.P99) || !atLeast(l.Max, a.Max) {
					t.Errorf("commit latency %+v below the agent's own part %+v", l, *a)
				}
			}
			if wantFlush && res.Flushes != res.Commits {
				t.Errorf("%d flushes for %d commits, one in flight", res.Flushes, res.Commits)
			}
			if !wantFlush && res.Flushes != 0 {
				t.Errorf("%d flushes with --ack %s", res.Flushes, c.ack)
			}
			if res.Target != nil && (res.Target.Path != dir || res.Target.FileBytes != 4<<20 || res.Target.Layout <= 0) {
				t.Errorf("target %+v", res.Target)
			}
			empty(t, dir)
		})
	}
}

// TestCommitGroupFlush: with blocks in flight the agent makes durable in
// one flush every block that arrived while it flushed: fewer flushes than
// commits, and every block counted once at both ends.
func TestCommitGroupFlush(t *testing.T) {
	dir := t.TempDir()
	s := agentAt(t, agent.Config{}, dir)
	for _, flush := range []string{result.FlushFdatasync, result.FlushDsync} {
		t.Run(flush, func(t *testing.T) {
			res, err := commit.Run(context.Background(), s, commit.Config{Block: 4 << 10, InFlight: 8, Ack: result.AckFlush, Flush: flush, Size: 1 << 20,
				Duration: time.Second, Interval: 250 * time.Millisecond}, func(result.Interval) {})
			if err != nil {
				t.Fatal(err)
			}
			if res.Commits == 0 || res.Flushes < 1 || res.Flushes >= res.Commits || res.Bytes != res.Commits*4096 {
				t.Fatalf("%d commits, %d flushes, %d bytes", res.Commits, res.Flushes, res.Bytes)
			}
			t.Logf("%d commits in %d flushes", res.Commits, res.Flushes)
			empty(t, dir)
		})
	}
}

// TestCommitInterrupted: the context ending mid-run stops the test and
// returns what was measured, marked, with no error; the agent removes
// its file.
func TestCommitInterrupted(t *testing.T) {
	dir := t.TempDir()
	s := agentAt(t, agent.Config{}, dir)
	for _, inFlight := range []int{1, 4} {
		ctx, cancel := context.WithCancel(context.Background())
		res, err := commit.Run(ctx, s, commit.Config{Block: 8 << 10, InFlight: inFlight, Size: 1 << 20, Duration: time.Minute, Interval: 100 * time.Millisecond},
			func(result.Interval) { cancel() })
		cancel()
		if err != nil || res.Stopped != probe.Interrupted || res.Commits == 0 {
			t.Fatalf("in flight %d: %v, stopped %q, %d commits", inFlight, err, res.Stopped, res.Commits)
		}
		for t0 := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			if left, _ := os.ReadDir(dir); len(left) == 0 {
				break
			}
			if time.Since(t0) > 20*time.Second {
				empty(t, dir)
			}
		}
	}
}

// TestCommitRefusals: what a client cannot ask is refused in words,
// before anything runs, by the client library or by the agent; nothing
// is left in the directory.
func TestCommitRefusals(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	s := agentAt(t, agent.Config{MaxTestMemory: 1 << 20, MaxDiskSize: 8 << 20, MaxDuration: 5 * time.Second}, dir)
	none := agentAt(t, agent.Config{}, "")
	ok := commit.Config{Block: 8 << 10, InFlight: 1, Ack: result.AckFlush, Duration: time.Second, Interval: 100 * time.Millisecond}
	cases := []struct {
		name string
		s    *client.Session
		edit func(*commit.Config)
		want string
	}{
		{"outside", s, func(c *commit.Config) { c.Path = outside }, "is outside the directories this agent allows disk tests in"},
		{"block too large", s, func(c *commit.Config) { c.Block = 2 << 20 }, "--block 2 MiB: use 512 B to 1 MiB"},
		{"block too small", s, func(c *commit.Config) { c.Block = 100 }, "--block 100 B: use 512 B to 1 MiB"},
		{"in flight", s, func(c *commit.Config) { c.InFlight = 5000 }, "--in-flight 5000: use 1 to 1024"},
		{"memory", s, func(c *commit.Config) { c.InFlight = 256 }, "--max-test-memory"},
		{"file size", s, func(c *commit.Config) { c.Size = 16 << 20 }, "--size 16 MiB: the agent at"},
		{"duration", s, func(c *commit.Config) { c.Duration = time.Minute }, "its --max-duration"},
		{"flush with no disk path", none, func(*commit.Config) {}, "writes no files (it was started without --disk-path)"},
		{"an unknown ack", s, func(c *commit.Config) { c.Ack = "apply" }, `--ack "apply": use receive, write or flush`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			_, err := commit.Run(context.Background(), c.s, cfg, func(result.Interval) {})
			if !errext.IsUser(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want a refusal saying %q", err, c.want)
			}
		})
	}
	empty(t, dir)
	empty(t, outside)

	// Receive only, without a directory: with Fallback, asked for nothing
	// in particular, it runs and says so.
	cfg := ok
	cfg.Ack, cfg.Fallback, cfg.Duration = "", true, 300*time.Millisecond
	res, err := commit.Run(context.Background(), none, cfg, func(result.Interval) {})
	if err != nil || res.Config.Ack != result.AckReceive || res.Commits == 0 || len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], "receive only: ") {
		t.Fatalf("fallback: %v, config %+v, %d commits, notes %q", err, res.Config, res.Commits, res.Notes)
	}
}
